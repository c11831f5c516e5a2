// add_forward, sum_to, concat_forward / concat_backward on cuda:0 against
// the CPU table: the broadcasts of tests/train/test_grad_tensor_ops.cpp, sums
// over few and many values per output (the two kernels), concatenation on
// several axes with some part gradients not wanted; overwritten and
// accumulated; relative error <= 1e-5 (copies are exact).
#include "train_test_util.h"

namespace tandem::testing {
namespace {

TEST(CudaTrainAdd, BroadcastsMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  std::vector<std::pair<Shape, Shape>> cases{{{2, 3, 4, 5}, {2, 3, 4, 5}},
                                             {{2, 3, 4, 5}, {1, 3, 1, 1}},
                                             {{1, 3, 1, 5}, {2, 3, 4, 5}},
                                             {{4, 6}, {1, 6}},
                                             {{2, 3, 4, 5}, {2, 1, 4, 1}},
                                             {{32, 64, 14, 14}, {1, 64, 1, 1}}};
  uint32_t seed = 1;
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(shape_str(sa) + " + " + shape_str(sb));
    Pair a = random_pair(sa, seed++), b = random_pair(sb, seed++);
    Pair y = empty_pair(ops::add_output_shape(sa, sb));
    cpu_table().add_forward(cpu_table().ctx, a.cpu, b.cpu, y.cpu);
    gpu_table().add_forward(gpu_table().ctx, a.gpu, b.gpu, y.gpu);
    expect_close(y, kTolerance, "y");
  }
}

TEST(CudaTrainSumTo, ReductionsMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  std::vector<std::pair<Shape, Shape>> cases{
      {{2, 3, 4, 5}, {1, 3, 1, 1}},   {{2, 3, 4, 5}, {2, 3, 4, 5}},     {{2, 3, 4, 5}, {1, 1, 1, 1}},
      {{2, 3, 4, 5}, {2, 1, 4, 1}},   {{4, 6}, {1, 6}},                 {{4, 6}, {4, 1}},
      {{64, 128, 7, 7}, {1, 128, 1, 1}}, {{128, 10}, {1, 10}},          {{3, 200}, {3, 1}}};
  uint32_t seed = 100;
  for (const auto& [src, dst] : cases)
    for (GradMode mode : {GradMode::overwrite, GradMode::accumulate}) {
      SCOPED_TRACE(shape_str(src) + " -> " + shape_str(dst) + ", " + mode_name(mode));
      Pair s = random_pair(src, seed++);
      GradPair d = grad_pair(dst, mode, seed++);
      cpu_table().sum_to(cpu_table().ctx, s.cpu, d.cpu());
      gpu_table().sum_to(gpu_table().ctx, s.gpu, d.gpu());
      expect_close(d.t, kTolerance, "dst");
    }
}

TEST(CudaTrainSumTo, ShapesThatDoNotReduceAreErrors) {
  TANDEM_REQUIRE_GPU();
  const TrainBackend& g = gpu_table();
  Tensor src = up(random_f32({2, 3}, 1)), dst = g.empty(g.ctx, DType::f32, {2, 2});
  EXPECT_THROW(g.sum_to(g.ctx, src, {dst, GradMode::overwrite}), Error);
}

void concat_case(const std::vector<Shape>& parts, int64_t axis, const std::vector<bool>& wanted, GradMode mode,
                 uint32_t seed) {
  SCOPED_TRACE("concat on axis " + std::to_string(axis) + ", " + mode_name(mode));
  std::vector<Tensor> xc, xg;
  for (const Shape& s : parts) {
    Pair p = random_pair(s, seed++);
    xc.push_back(p.cpu);
    xg.push_back(p.gpu);
  }
  Pair y = empty_pair(ops::concat_output_shape(xc, axis));
  cpu_table().concat_forward(cpu_table().ctx, axis, xc, y.cpu);
  gpu_table().concat_forward(gpu_table().ctx, axis, xg, y.gpu);
  expect_same_bits(y.gpu, y.cpu, "y");

  int64_t a = normalize_axis(axis, int64_t(parts[0].size()));
  std::vector<int64_t> extents;
  std::vector<GradPair> grads;
  std::vector<GradOut> dc, dg;
  for (size_t i = 0; i < parts.size(); ++i) {
    extents.push_back(parts[i][size_t(a)]);
    grads.push_back(grad_pair(parts[i], mode, seed++));
    dc.push_back(wanted[i] ? grads.back().cpu() : GradOut{});
    dg.push_back(wanted[i] ? grads.back().gpu() : GradOut{});
  }
  Pair dy = random_pair(y.cpu.shape(), seed++);
  cpu_table().concat_backward(cpu_table().ctx, axis, dy.cpu, extents, dc);
  gpu_table().concat_backward(gpu_table().ctx, axis, dy.gpu, extents, dg);
  for (size_t i = 0; i < parts.size(); ++i)
    if (wanted[i]) expect_close(grads[i].t, kTolerance, "part " + std::to_string(i));
}

TEST(CudaTrainConcat, MatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  for (GradMode mode : {GradMode::overwrite, GradMode::accumulate}) {
    concat_case({{2, 2, 3, 3}, {2, 1, 3, 3}, {2, 3, 3, 3}}, 1, {true, true, true}, mode, 1);
    concat_case({{3, 2}, {3, 4}}, -1, {true, false}, mode, 20);
    concat_case({{1, 5, 4}, {2, 5, 4}}, 0, {false, true}, mode, 40);
    concat_case({{16, 32, 14, 14}, {16, 64, 14, 14}}, 1, {true, true}, mode, 60);
  }
}

}  // namespace
}  // namespace tandem::testing
