// A tiny CNN (conv, BN, ReLU, max pool, a strided ResNet BasicBlock with a
// downsample, a dilated depthwise conv, hardswish, average and global
// pooling, flatten, linear, SiLU, dropout(0), linear) against Debian's
// PyTorch 1.13 (tests/train/tiny_cnn_torch.py): the same weights (our
// seeded init, loaded by state_dict name, strictly) and batch give the same
// cross-entropy (label smoothing 0.1), parameter gradients and updated
// running statistics, each within 1e-4 of the tensor's largest magnitude
// (plus 1e-4 relative). Skipped without /usr/bin/python3 or torch.
#include <gtest/gtest.h>


#include "tests/numpy_ref.h"
#include "tests/train/grad_check.h"
#include "tests/train/tiny_cnn.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

TEST(TorchTinyCnn, SameLossGradientsAndRunningStats) {
  if (!have_reference_python()) GTEST_SKIP() << kReferencePython << " missing";
  Rng rng(2024);
  Sequential net;
  build_tiny_cnn(net, rng, 0.f);
  std::string dir = make_temp_dir();
  for (const auto& [name, t] : net.state_dict()) write_npy(dir + "/" + name + ".npy", t);
  Tensor x = random_tensor({6, 1, 12, 12}, 99, -2, 2);
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{3, 0, 9, 3, 7, 1}, {6});
  write_npy(dir + "/x.npy", x);
  write_npy(dir + "/labels.npy", labels);
  if (!run_reference_script("train/tiny_cnn_torch.py", dir)) GTEST_SKIP() << "torch missing";

  Var loss = cross_entropy(net(Var(x)), labels, 0.1f);
  backward(loss);
  expect_near_scaled(loss.value(), to_doubles(read_npy(dir + "/loss.npy", DType::f32)), 1e-4, 1e-4, "loss");
  for (Parameter* p : net.parameters())
    expect_near_scaled(p->grad, to_doubles(read_npy(dir + "/grad." + p->name + ".npy", DType::f32)), 1e-4, 1e-4,
                       "gradient of " + p->name);
  for (Buffer* b : net.buffers()) {
    if (!b->persistent) continue;  // the dropout call count: no PyTorch twin
    DType t = b->value.dtype();
    expect_near_scaled(b->value, to_doubles(read_npy(dir + "/after." + b->name + ".npy", t)), 1e-4, 1e-4,
                       "buffer " + b->name);
  }
  (void)std::system(("rm -rf " + dir).c_str());
}
