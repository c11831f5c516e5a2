// CUDA Not and Where vs the CPU backend (itself checked against ONNX's node
// tests): both only move values, so the results must be identical, for
// every dtype and broadcast pattern, at every precision. Inputs have over
// 64 elements: smaller integer and bool inputs are specialized into
// constants, and an op on constants alone folds on the host.
#include <random>
#include <string>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

Tensor random_mask(const Shape& s, uint32_t seed) {
  Tensor m = Tensor::empty(DType::boolean, s);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < m.numel(); ++i) static_cast<uint8_t*>(m.raw())[i] = uint8_t(rng() & 1);
  return m;
}

Tensor random_i64(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::i64, s);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = int64_t(rng());
  return t;
}

TEST(CudaLogical, NotOfAComparison) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId m = b.input("m", {3, 50}, DType::boolean);
  b.output(b.node("Not", {m}));
  // TF's NotEqual as formats/tfjs imports it: Not(Equal).
  ValueId x = b.input("x", {3, 50}), y = b.input("y", {50});
  b.output(b.node("Not", {b.node("Equal", {x, y})}));
  Tensor tx = random_f32({3, 50}, 2, -2.f, 2.f), ty = random_f32({50}, 3, -2.f, 2.f);
  for (int64_t i = 0; i < tx.numel(); i += 3) tx.data<float>()[i] = ty.data<float>()[i % 50];
  auto [cpu, gpu] = run_both(b.g, {random_mask({3, 50}, 1), tx, ty});
  expect_identical(gpu[0], cpu[0], "Not");
  expect_identical(gpu[1], cpu[1], "Not(Equal)");
}

struct WhereShapes {
  Shape cond, x, y;
};

TEST(CudaLogical, WhereBroadcastsEveryOperand) {
  TANDEM_REQUIRE_GPU();
  const WhereShapes shapes[] = {{{4, 30}, {4, 30}, {4, 30}},
                                {{2, 3, 4, 5}, {3, 1, 5}, {1}},
                                {{5, 1, 20}, {6, 20}, {5, 6, 1}},
                                {{70}, {3, 70}, {2, 1, 70}}};
  uint32_t seed = 10;
  for (const WhereShapes& s : shapes) {
    for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
      GraphBuilder b;
      ValueId c = b.input("c", s.cond, DType::boolean), x = b.input("x", s.x),
              y = b.input("y", s.y);
      b.output(b.node("Where", {c, x, y}));
      auto [cpu, gpu] = run_both(
          b.g,
          {random_mask(s.cond, seed), random_for(p, s.x, seed + 1), random_for(p, s.y, seed + 2)},
          p);
      seed += 3;
      expect_identical(gpu[0], cpu[0], "Where f32 " + shape_str(s.cond) + " " + precision_name(p));
    }
    GraphBuilder b;
    ValueId c = b.input("c", s.cond, DType::boolean);
    ValueId x = b.input("x", s.x, DType::i64), y = b.input("y", s.y, DType::i64);
    b.output(b.node("Where", {c, x, y}));
    auto [cpu, gpu] = run_both(
        b.g, {random_mask(s.cond, seed), random_i64(s.x, seed + 1), random_i64(s.y, seed + 2)});
    seed += 3;
    expect_identical(gpu[0], cpu[0], "Where i64 " + shape_str(s.cond));
  }
}

}  // namespace
}  // namespace tandem::testing
