// The training loop against PyTorch 1.13 (tests/train/trainer_torch.py):
// the small Fashion-MNIST cnn (dropout 0, so no mask to match) from the same initial
// weights on the same 20 Fashion-MNIST batches of 32, in the same order,
// gives the same training losses step by step:
//  - SGD (lr 0.01, momentum 0.9): within 1e-4 relative (we see < 3e-6);
//  - Adam (lr 1e-3): within 1e-4 relative plus twice the distance between
//    PyTorch's own float32 and float64 runs at that step. Adam's first steps
//    move every weight by about lr * sign(gradient), so a weight whose
//    gradient is at rounding level moves +-lr on a coin flip in any fp32
//    implementation: PyTorch's float32 run leaves its float64 run by up to
//    1.6e-4 within these 20 steps, and ours leaves PyTorch's by as much.
// Skipped without torch or Debian's dataset-fashion-mnist. The same on the
// GPU: tests/gpu/test_cuda_trainer_torch.cpp.
#include <gtest/gtest.h>

#include "tests/numpy_ref.h"
#include "tests/train/trainer_torch_util.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;


TEST(TrainerTorch, First20LossesMatchPyTorch) {
  if (!have_reference_python()) GTEST_SKIP() << kReferencePython << " missing";
  expect_first_losses_match(Device::cpu(), kReferencePython);
}
