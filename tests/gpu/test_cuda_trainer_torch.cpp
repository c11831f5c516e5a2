// The training loop on cuda:0 against PyTorch on the same GPU (TF32 off):
// the first 20 losses of the cnn, as tests/train/test_trainer_torch.cpp
// checks on the CPU. PyTorch is the device's (python3 on PATH, or
// $TANDEM_GPU_PYTHON), Fashion-MNIST from $TANDEM_FASHION_MNIST_DIR there.
#include <cstdlib>

#include "gpu_test_util.h"
#include "tests/train/trainer_torch_util.h"

namespace tandem::testing {
namespace {

TEST(CudaTrainerTorch, First20LossesMatchPyTorchOnTheGpu) {
  TANDEM_REQUIRE_GPU();
  const char* python = std::getenv("TANDEM_GPU_PYTHON");
  expect_first_losses_match(Device::cuda(0), python && *python ? python : "python3");
}

}  // namespace
}  // namespace tandem::testing
