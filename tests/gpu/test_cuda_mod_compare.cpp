// CUDA Mod (both fmod modes), GreaterOrEqual and LessOrEqual vs the CPU
// backend (itself checked against numpy and ONNX's node tests): integers
// and masks exactly, float Mod within 1e-5 of the reference norm in fp32
// (it is exact arithmetic: fmod never rounds), 1e-2 with the GPU graph
// lowered to fp16 / bf16. Operands of both signs, zeros, and broadcasting;
// integer divisors never zero (the CPU stops with an error there).
#include <random>
#include <string>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

Attributes fmod_attr(int64_t fmod) {
  Attributes a;
  a.set("fmod", fmod);
  return a;
}

Tensor ints(DType t, const Shape& s, uint32_t seed, int64_t lo, int64_t hi, bool nonzero) {
  Tensor r = Tensor::empty(t, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  for (int64_t i = 0; i < r.numel(); ++i) {
    int64_t v = u(rng);
    if (nonzero && v == 0) v = 1 + int64_t(i % 3);
    if (t == DType::i64)
      r.data<int64_t>()[i] = v;
    else
      r.data<int32_t>()[i] = int32_t(v);
  }
  return r;
}

// Floats on a grid of quarters, so many dividends are exact multiples of
// their divisor (a zero remainder, whose sign follows the divisor with
// fmod = 0) and the divisor is never zero.
Tensor quarters(const Shape& s, uint32_t seed, bool nonzero) {
  Tensor t = random_f32(s, seed, -40.f, 40.f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = std::round(t.data<float>()[i] * 4.f) / 4.f;
    t.data<float>()[i] = nonzero && v == 0.f ? -1.25f : v;
  }
  return t;
}

// The first operand has over 64 elements: smaller integer inputs are
// specialized into constants, and an op on constants alone folds on the host.
struct Shapes {
  Shape a, b;
};
const Shapes kShapes[] = {
    {{4, 33}, {4, 33}}, {{2, 3, 4, 5}, {3, 1, 5}}, {{2, 3, 4, 5}, {}}, {{3, 5, 7}, {7}}};

TEST(CudaMod, IntegerModBothModesIsExact) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 1;
  for (DType t : {DType::i32, DType::i64})
    for (int64_t fmod : {0, 1})
      for (const Shapes& s : kShapes) {
        GraphBuilder b;
        ValueId a = b.input("a", s.a, t), d = b.input("d", s.b, t);
        b.output(b.node("Mod", {a, d}, fmod_attr(fmod)));
        Tensor ta = ints(t, s.a, seed++, -1000, 1000, false);
        Tensor td = ints(t, s.b, seed++, -17, 17, true);
        auto [cpu, gpu] = run_both(b.g, {ta, td});
        expect_identical(gpu[0], cpu[0],
                         std::string(dtype_name(t)) + " fmod=" + std::to_string(fmod) + " " +
                             shape_str(s.a) + " % " + shape_str(s.b));
      }
}

void expect_float_mod_matches(Precision p) {
  uint32_t seed = 100;
  for (int64_t fmod : {0, 1})
    for (const Shapes& s : kShapes) {
      GraphBuilder b;
      ValueId a = b.input("a", s.a), d = b.input("d", s.b);
      b.output(b.node("Mod", {a, d}, fmod_attr(fmod)));
      // Quarters are exact in f16 and bf16 at this range.
      auto [cpu, gpu] =
          run_both(b.g, {quarters(s.a, seed, false), quarters(s.b, seed + 1, true)}, p);
      seed += 2;
      EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
          << "fmod=" << fmod << " " << shape_str(s.a) << " % " << shape_str(s.b) << " "
          << precision_name(p);
    }
}

TEST(CudaMod, FloatModBothModes) {
  TANDEM_REQUIRE_GPU();
  expect_float_mod_matches(Precision::fp32);
}

TEST(CudaMod, FloatModInHalfPrecision) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) expect_float_mod_matches(p);
}

// TF's FloorDiv / FloorMod on int32 as formats/tfjs imports them (Mod with
// fmod = 0, then Sub and Div): CenterNet's flat index -> (y, x, class).
TEST(CudaMod, TfFloorDivOfIntegerIndices) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId idx = b.input("idx", {2, 100}, DType::i32);
  ValueId d = b.constant("d", Tensor::from_vector<int32_t>({80}, {}));
  ValueId m = b.node("Mod", {idx, d}, fmod_attr(0));
  b.output(m);
  b.output(b.node("Div", {b.node("Sub", {idx, m}), d}));
  auto [cpu, gpu] = run_both(b.g, {ints(DType::i32, {2, 100}, 7, -5000, 1310719, false)});
  expect_identical(gpu[0], cpu[0], "FloorMod");
  expect_identical(gpu[1], cpu[1], "FloorDiv");
}

// Quarters make equal pairs, so the or-equal half of each mask is tested.
TEST(CudaCompare, GreaterOrEqualAndLessOrEqualMasks) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 200;
  for (const char* op : {"GreaterOrEqual", "LessOrEqual"})
    for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16})
      for (const Shapes& s : kShapes) {
        GraphBuilder b;
        ValueId a = b.input("a", s.a), c = b.input("c", s.b);
        b.output(b.node(op, {a, c}));
        Tensor ta = quarters(s.a, seed++, false), tc = quarters(s.b, seed++, false);
        for (int64_t i = 0; i < ta.numel(); ++i)
          ta.data<float>()[i] = std::round(ta.data<float>()[i] / 8.f);
        for (int64_t i = 0; i < tc.numel(); ++i)
          tc.data<float>()[i] = std::round(tc.data<float>()[i] / 8.f);
        auto [cpu, gpu] = run_both(b.g, {ta, tc}, p);
        expect_identical(gpu[0], cpu[0],
                         std::string(op) + " " + shape_str(s.a) + " , " + shape_str(s.b) + " " +
                             precision_name(p));
      }
  for (const char* op : {"GreaterOrEqual", "LessOrEqual"}) {
    GraphBuilder b;
    ValueId a = b.input("a", {5, 40}, DType::i64), c = b.input("c", {40}, DType::i64);
    b.output(b.node(op, {a, c}));
    auto [cpu, gpu] = run_both(b.g, {ints(DType::i64, {5, 40}, seed, -3, 3, false),
                                     ints(DType::i64, {40}, seed + 1, -3, 3, false)});
    seed += 2;
    expect_identical(gpu[0], cpu[0], std::string(op) + " int64");
  }
}

}  // namespace
}  // namespace tandem::testing
