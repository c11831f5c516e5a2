// conv2d_forward / conv2d_backward on cuda:0 (cuDNN) against the CPU table
// (oneDNN) over every stride, padding, dilation and group case of the
// gradient checks (tests/train/conv_cases.h), with and without bias, gradients
// overwritten and accumulated; relative error <= 1e-4 (train_test_util.h).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "../scoped_env.h"
#include "../temp_dir.h"
#include "tests/train/conv_cases.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

// The gradient checks' cases, and the small CNN's layers at a training batch
// (cuDNN's algorithms for real shapes, not only its tiny-shape ones).
std::vector<ConvCase> cases() {
  std::vector<ConvCase> c = conv_grad_cases();
  c.push_back({"SmallCnnConv1", "small CNN conv1", {32, 1, 28, 28}, {32, 1, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)});
  c.push_back({"SmallCnnConv2", "small CNN conv2", {32, 32, 14, 14}, {64, 32, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)});
  return c;
}

void run(const ConvCase& c, GradMode mode, uint32_t seed) {
  SCOPED_TRACE(c.name + ", gradients " + mode_name(mode));
  Pair x = random_pair(c.x, seed), w = random_pair(c.w, seed + 1);
  Pair b = c.bias ? random_pair({c.w[0]}, seed + 2) : Pair{};
  Shape ys = ops::conv2d_output_shape(c.p, c.x, c.w);
  Pair y = empty_pair(ys);
  cpu_table().conv2d_forward(cpu_table().ctx, c.p, x.cpu, w.cpu, b.cpu, y.cpu);
  gpu_table().conv2d_forward(gpu_table().ctx, c.p, x.gpu, w.gpu, b.gpu, y.gpu);
  expect_close(y, kConvTolerance, "y");

  Pair dy = random_pair(ys, seed + 3);
  GradPair dx = grad_pair(c.x, mode, seed + 4), dw = grad_pair(c.w, mode, seed + 5);
  GradPair db = c.bias ? grad_pair({c.w[0]}, mode, seed + 6) : GradPair{{}, mode};
  cpu_table().conv2d_backward(cpu_table().ctx, c.p, x.cpu, w.cpu, dy.cpu, dx.cpu(), dw.cpu(),
                              c.bias ? db.cpu() : GradOut{});
  gpu_table().conv2d_backward(gpu_table().ctx, c.p, x.gpu, w.gpu, dy.gpu, dx.gpu(), dw.gpu(),
                              c.bias ? db.gpu() : GradOut{});
  expect_close(dx.t, kConvTolerance, "dx");
  expect_close(dw.t, kConvTolerance, "dw");
  if (c.bias) expect_close(db.t, kTolerance, "db");
}

TEST(CudaTrainConv, EveryCaseMatchesTheCpuOverwritingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const ConvCase& c : cases()) run(c, GradMode::overwrite, seed += 10);
}

TEST(CudaTrainConv, EveryCaseMatchesTheCpuAccumulatingGradients) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 500;
  for (const ConvCase& c : cases()) run(c, GradMode::accumulate, seed += 10);
}

// Each direction's choice goes to the on-disk algorithm cache under its own
// key (the results still match the CPU), so the next process skips cuDNN's
// search.
TEST(CudaTrainConv, AlgorithmChoicesGoToTheDiskCachePerDirection) {
  TANDEM_REQUIRE_GPU();
  TempDir dir("train_algo_cache");
  ScopedEnv cache_dir("TANDEM_CACHE_DIR", dir.path().c_str());
  ScopedEnv enabled("TANDEM_ALGO_CACHE", nullptr);
  // A problem no other test plans in this process, so its plan is new here.
  ConvCase c{"CacheProbe",
             "3x3 pad 1, odd sizes",
             {3, 5, 9, 11},
             {7, 5, 3, 3},
             conv_params(1, 1, 1, 1, 1, 1, 1)};
  run(c, GradMode::overwrite, 900);
  std::vector<std::string> keys;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    std::ifstream f(e.path());
    const nlohmann::json doc =
        nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
    for (const auto& [key, entry] : doc["entries"].items()) keys.push_back(key);
  }
  auto count = [&](const std::string& part) {
    return std::count_if(keys.begin(), keys.end(), [&](const std::string& k) {
      return k.find("nchw n3 c5 h9 w11 k7") != std::string::npos &&
             k.find(part) != std::string::npos;
    });
  };
  EXPECT_EQ(count(""), 3) << "entries of the probe's problem";
  EXPECT_EQ(count(" backward-data"), 1);
  EXPECT_EQ(count(" backward-filter"), 1);
}

// A first layer's backward: no input gradient, only the weights' and bias's;
// and the reverse (frozen weights).
TEST(CudaTrainConv, PartialGradients) {
  TANDEM_REQUIRE_GPU();
  ConvCase c = cases()[2];
  Pair x = random_pair(c.x, 1), w = random_pair(c.w, 2);
  Shape ys = ops::conv2d_output_shape(c.p, c.x, c.w);
  Pair dy = random_pair(ys, 3);
  GradPair dw = grad_pair(c.w, GradMode::overwrite, 4), db = grad_pair({c.w[0]}, GradMode::overwrite, 5);
  cpu_table().conv2d_backward(cpu_table().ctx, c.p, x.cpu, w.cpu, dy.cpu, {}, dw.cpu(), db.cpu());
  gpu_table().conv2d_backward(gpu_table().ctx, c.p, x.gpu, w.gpu, dy.gpu, {}, dw.gpu(), db.gpu());
  expect_close(dw.t, kConvTolerance, "dw only");
  expect_close(db.t, kTolerance, "db only");
  GradPair dx = grad_pair(c.x, GradMode::overwrite, 6);
  cpu_table().conv2d_backward(cpu_table().ctx, c.p, x.cpu, w.cpu, dy.cpu, dx.cpu(), {}, {});
  gpu_table().conv2d_backward(gpu_table().ctx, c.p, x.gpu, w.gpu, dy.gpu, dx.gpu(), {}, {});
  expect_close(dx.t, kConvTolerance, "dx only");
}

TEST(CudaTrainConv, BadShapesAndHostTensorsAreErrors) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor x = up(random_f32({1, 4, 5, 5}, 1)), w = up(random_f32({3, 3, 3, 3}, 2));
  Tensor y = g.empty(g.ctx, DType::f32, {1, 3, 3, 3});
  EXPECT_THROW(g.conv2d_forward(g.ctx, {}, x, w, Tensor(), y), Error);  // 4 channels vs weight's 3
  Tensor w4 = up(random_f32({3, 4, 3, 3}, 2));
  Tensor host_x = random_f32({1, 4, 5, 5}, 1);
  EXPECT_THROW(g.conv2d_forward(g.ctx, {}, host_x, w4, Tensor(), y), Error);  // x on the host
  Tensor wrong_y = g.empty(g.ctx, DType::f32, {1, 3, 4, 4});
  EXPECT_THROW(g.conv2d_forward(g.ctx, {}, x, w4, Tensor(), wrong_y), Error);
}

}  // namespace
}  // namespace tandem::testing
