// CUDA binary/compare ops, Softmax, data movement, pooling, reductions,
// BatchNormalization and Cast vs the CPU backend: fp32 relative error
// <= 1e-5 of the reference norm; exact where nothing is computed (copies,
// masks, integer casts). The arithmetic again with the GPU graph lowered to
// fp16 and bf16 (the CPU in f32 on the same rounded inputs): <= 1e-2.
#include <cmath>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

constexpr double kFp32 = 1e-5;

// Values on a coarse grid, so Equal finds equal pairs and Greater/Less ties.
Tensor grid_f32(const Shape& s, uint32_t seed) {
  Tensor t = random_f32(s, seed, -3.f, 3.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
  return t;
}

struct BinaryCase {
  const char* op;
  Shape a, b;
  bool b_const;
};

// Every arithmetic op through each access pattern: general broadcast,
// per-channel (squeeze-excite), scalar on either side, same shape.
void expect_binary_arithmetic_matches(Precision p) {
  std::vector<BinaryCase> cases;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Min", "Max"}) {
    cases.push_back({op, {2, 3, 4, 5}, {3, 1, 5}, false});
    cases.push_back({op, {3, 1, 5}, {2, 3, 4, 5}, false});
    cases.push_back({op, {2, 16, 7, 7}, {1, 16, 1, 1}, false});
    cases.push_back({op, {2, 16, 7, 7}, {16, 1, 1}, true});
    cases.push_back({op, {2, 3, 4, 5}, {}, true});
    cases.push_back({op, {1}, {2, 3, 4, 5}, false});
    cases.push_back({op, {6, 7}, {6, 7}, false});
  }
  uint32_t seed = 100;
  for (const BinaryCase& c : cases) {
    bool div = std::string(c.op) == "Div";
    GraphBuilder b;
    std::vector<Tensor> in = {random_for(p, c.a, seed++)};
    ValueId a = b.input("a", c.a);
    // A divisor kept away from 0.
    Tensor bt = div ? random_for(p, c.b, seed++, 0.5f, 2.f) : random_for(p, c.b, seed++);
    ValueId bv = c.b_const ? b.constant("b", bt) : b.input("b", c.b);
    if (!c.b_const) in.push_back(bt);
    b.output(b.node(c.op, {a, bv}));
    auto [cpu, gpu] = run_both(b.g, in, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
        << c.op << " " << shape_str(c.a) << " , " << shape_str(c.b) << " " << precision_name(p);
  }
}

TEST(CudaBinary, BroadcastingArithmeticMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_binary_arithmetic_matches(Precision::fp32);
}

void expect_pow_matches(Precision p) {
  {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 4, 5});
    ValueId e = b.input("e", {3, 1, 5});
    b.output(b.node("Pow", {x, e}));
    auto [cpu, gpu] = run_both(
        b.g, {random_for(p, {2, 3, 4, 5}, 1, 0.1f, 3.f), random_for(p, {3, 1, 5}, 2, -2.f, 2.f)}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << precision_name(p);
  }
  {  // an int64 constant exponent, converted at prepare
    GraphBuilder b;
    ValueId x = b.input("x", {4, 50});
    ValueId e = b.constant("e", Tensor::from_vector<int64_t>({3}, {}));
    b.output(b.node("Pow", {x, e}));
    auto [cpu, gpu] = run_both(b.g, {random_for(p, {4, 50}, 3)}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << "int64 exponent " << precision_name(p);
  }
}

TEST(CudaBinary, PowWithTensorAndConstantExponents) {
  TANDEM_REQUIRE_GPU();
  expect_pow_matches(Precision::fp32);
}

// Grid values are exact in f16 and bf16 too, so the masks must be identical
// at every precision.
void expect_comparisons_match(Precision p) {
  uint32_t seed = 200;
  for (const char* op : {"Equal", "Greater", "Less"}) {
    for (auto shapes : {std::pair<Shape, Shape>{{2, 3, 4, 5}, {3, 1, 5}}, {{2, 8, 3, 3}, {1, 8, 1, 1}},
                        {{10, 10}, {10, 10}}, {{7, 9}, {}}}) {
      GraphBuilder b;
      ValueId a = b.input("a", shapes.first);
      ValueId bv = b.input("b", shapes.second);
      b.output(b.node(op, {a, bv}));
      auto [cpu, gpu] = run_both(b.g, {grid_f32(shapes.first, seed), grid_f32(shapes.second, seed + 1)}, p);
      seed += 2;
      expect_identical(gpu[0], cpu[0], std::string(op) + " " + shape_str(shapes.first) + " , " +
                                           shape_str(shapes.second) + " " + precision_name(p));
    }
  }
}

TEST(CudaBinary, ComparisonsGiveTheCpusMask) {
  TANDEM_REQUIRE_GPU();
  expect_comparisons_match(Precision::fp32);
}

TEST(CudaBinary, IntegerAddAndMul) {
  TANDEM_REQUIRE_GPU();
  for (const char* op : {"Add", "Mul"}) {
    GraphBuilder b;
    ValueId a = b.input("a", {4, 3}, DType::i64);
    ValueId c = b.constant("c", Tensor::from_vector<int64_t>({2, -3, 5}, {3}));
    b.output(b.node(op, {a, c}));
    Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -12}, {4, 3});
    auto [cpu, gpu] = run_both(b.g, {x});
    expect_identical(gpu[0], cpu[0], op);
  }
}

void expect_softmax_matches(Precision p) {
  struct Case {
    const char* op;
    Shape s;
    int64_t axis;
  };
  uint32_t seed = 300;
  for (Case c : {Case{"Softmax", {8, 1000}, -1}, Case{"Softmax", {2, 5, 7}, 1}, Case{"LogSoftmax", {8, 1000}, -1},
                 Case{"LogSoftmax", {2, 5, 7}, 1}, Case{"Softmax", {3, 4, 2000}, 2}}) {
    GraphBuilder b;
    ValueId x = b.input("x", c.s);
    Attributes a;
    a.set("axis", c.axis);
    b.output(b.node(c.op, {x}, a));
    // Large logits: a softmax without the max shift would overflow.
    auto [cpu, gpu] = run_both(b.g, {random_for(p, c.s, seed++, -60.f, 90.f)}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
        << c.op << " " << shape_str(c.s) << " axis " << c.axis << " " << precision_name(p);
  }
}

TEST(CudaSoftmax, LastAxisAndMiddleAxis) {
  TANDEM_REQUIRE_GPU();
  expect_softmax_matches(Precision::fp32);
}

TEST(CudaData, ConcatOnAxisOneOfThreeInputs) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 4, 5}), y = b.input("y", {2, 1, 4, 5}), z = b.input("z", {2, 6, 4, 5});
  Attributes a;
  a.set("axis", int64_t(1));
  b.output(b.node("Concat", {x, y, z}, a));
  auto [cpu, gpu] = run_both(b.g, {random_f32({2, 3, 4, 5}, 1), random_f32({2, 1, 4, 5}, 2), random_f32({2, 6, 4, 5}, 3)});
  expect_identical(gpu[0], cpu[0], "Concat axis 1");
}

TEST(CudaData, ConcatOfInt64ShapeVectors) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2}, DType::i64);
  ValueId c = b.constant("c", Tensor::from_vector<int64_t>({-1, 7, 9}, {3}));
  Attributes a;
  a.set("axis", int64_t(0));
  b.output(b.node("Concat", {x, c}, a));
  auto [cpu, gpu] = run_both(b.g, {Tensor::from_vector<int64_t>({4, 5}, {2})});
  expect_identical(gpu[0], cpu[0], "Concat int64");
}

TEST(CudaData, TransposePermutations) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 400;
  for (auto c : {std::pair<Shape, std::vector<int64_t>>{{2, 3, 4, 5}, {0, 2, 3, 1}}, {{3, 4, 5}, {2, 0, 1}},
                 {{2, 3, 2, 3, 2, 3}, {5, 3, 1, 0, 2, 4}}}) {
    GraphBuilder b;
    ValueId x = b.input("x", c.first);
    Attributes a;
    a.set("perm", c.second);
    b.output(b.node("Transpose", {x}, a));
    auto [cpu, gpu] = run_both(b.g, {random_f32(c.first, seed++)});
    expect_identical(gpu[0], cpu[0], "Transpose " + shape_str(c.first));
  }
}

// Views: the output is the input's buffer under a new shape; a Relu after
// each proves the next kernel reads it right.
TEST(CudaData, ReshapeFlattenSqueezeUnsqueeze) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 4, 5});
  ValueId shape = b.constant("shape", Tensor::from_vector<int64_t>({6, -1}, {2}));
  b.output(b.node("Reshape", {x, shape}));
  b.output(b.node("Relu", {b.node("Flatten", {x})}));
  ValueId axes = b.constant("axes", Tensor::from_vector<int64_t>({0, 3}, {2}));
  ValueId u = b.node("Unsqueeze", {x, axes});
  b.output(b.node("Relu", {b.node("Squeeze", {u, axes})}));
  auto [cpu, gpu] = run_both(b.g, {random_f32({2, 3, 4, 5}, 5)});
  ASSERT_EQ(gpu.size(), 3u);
  for (size_t i = 0; i < 3; ++i) expect_identical(gpu[i], cpu[i], "view output " + std::to_string(i));
}

TEST(CudaData, GatherRowsWithInt64AndInt32Indices) {
  TANDEM_REQUIRE_GPU();
  {
    GraphBuilder b;
    ValueId x = b.input("x", {10, 7});
    ValueId idx = b.constant("idx", Tensor::from_vector<int64_t>({3, -1, 0, 9, 3}, {5}));
    b.output(b.node("Gather", {x, idx}));
    auto [cpu, gpu] = run_both(b.g, {random_f32({10, 7}, 6)});
    expect_identical(gpu[0], cpu[0], "Gather int64");
  }
  {
    GraphBuilder b;
    ValueId x = b.input("x", {10, 7});
    ValueId idx = b.input("idx", {2, 2}, DType::i32);
    b.output(b.node("Gather", {x, idx}));
    auto [cpu, gpu] = run_both(b.g, {random_f32({10, 7}, 7), Tensor::from_vector<int32_t>({1, 2, -3, 4}, {2, 2})});
    expect_identical(gpu[0], cpu[0], "Gather int32");
  }
}

void expect_global_average_pool_matches(Precision p) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 2048, 7, 7});
  b.output(b.node("GlobalAveragePool", {x}));
  auto [cpu, gpu] = run_both(b.g, {random_for(p, {2, 2048, 7, 7}, 8, 0.f, 5.f)}, p);
  EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << precision_name(p);
}

TEST(CudaPool, GlobalAveragePoolOfResNetFeatures) {
  TANDEM_REQUIRE_GPU();
  expect_global_average_pool_matches(Precision::fp32);
}

void expect_reduce_mean_matches(Precision p) {
  uint32_t seed = 500;
  for (auto c : {std::pair<std::vector<int64_t>, int64_t>{{2, 3}, 1}, {{2, 3}, 0}, {{-1}, 1}, {{1}, 0}}) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 8, 5, 6});
    Attributes a;
    a.set("axes", c.first);
    a.set("keepdims", c.second);
    b.output(b.node("ReduceMean", {x}, a));
    auto [cpu, gpu] = run_both(b.g, {random_for(p, {2, 8, 5, 6}, seed++)}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << "axes[0] " << c.first[0] << " " << precision_name(p);
  }
}

TEST(CudaReduce, ReduceMeanOverSpatialAxesAndLastAxis) {
  TANDEM_REQUIRE_GPU();
  expect_reduce_mean_matches(Precision::fp32);
}

void expect_batchnorm_matches(Precision p) {
  const int64_t ch = 16;
  GraphBuilder b;
  ValueId x = b.input("x", {2, ch, 9, 9});
  ValueId scale = b.constant("scale", random_for(p, {ch}, 1, 0.5f, 1.5f));
  ValueId bias = b.constant("bias", random_for(p, {ch}, 2));
  ValueId mean = b.constant("mean", random_for(p, {ch}, 3, -0.5f, 0.5f));
  ValueId var = b.constant("var", random_for(p, {ch}, 4, 0.5f, 2.f));
  Attributes a;
  a.set("epsilon", 1e-3f);
  b.output(b.node("BatchNormalization", {x, scale, bias, mean, var}, a));
  auto [cpu, gpu] = run_both(b.g, {random_for(p, {2, ch, 9, 9}, 5)}, p);
  EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << precision_name(p);
}

TEST(CudaNorm, BatchNormalizationInference) {
  TANDEM_REQUIRE_GPU();
  expect_batchnorm_matches(Precision::fp32);
}

// The float kernels above on f16 and bf16 (computed in f32, rounded once on
// the way out).
TEST(CudaHalfPrecision, ArithmeticMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    expect_binary_arithmetic_matches(p);
    expect_pow_matches(p);
    expect_comparisons_match(p);
    expect_softmax_matches(p);
    expect_global_average_pool_matches(p);
    expect_reduce_mean_matches(p);
    expect_batchnorm_matches(p);
  }
}

// Data movement of 2-byte floats: the values survive exactly.
TEST(CudaHalfPrecision, DataMovementIsExact) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    const std::string at = std::string(" ") + precision_name(p);
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 4, 5}), y = b.input("y", {2, 1, 4, 5});
    Attributes axis1, perm;
    axis1.set("axis", int64_t(1));
    perm.set("perm", std::vector<int64_t>{3, 0, 2, 1});
    b.output(b.node("Concat", {x, y}, axis1));
    b.output(b.node("Transpose", {x}, perm));
    ValueId idx = b.constant("idx", Tensor::from_vector<int64_t>({2, -1, 0}, {3}));
    b.output(b.node("Gather", {x, idx}, axis1));
    ValueId shape = b.constant("shape", Tensor::from_vector<int64_t>({6, -1}, {2}));
    b.output(b.node("Reshape", {x, shape}));
    auto [cpu, gpu] = run_both(b.g, {random_for(p, {2, 3, 4, 5}, 11), random_for(p, {2, 1, 4, 5}, 12)}, p);
    ASSERT_EQ(gpu.size(), 4u) << at;
    const char* what[] = {"Concat", "Transpose", "Gather", "Reshape"};
    for (size_t i = 0; i < 4; ++i) expect_identical(gpu[i], cpu[i], what[i] + at);
  }
}

Attributes cast_to(DType t) {
  Attributes a;
  int64_t code = t == DType::f16    ? 10
                 : t == DType::bf16 ? 16
                 : t == DType::i32  ? 6
                 : t == DType::i64  ? 7
                                    : 1;  // ONNX TensorProto codes
  a.set("to", code);
  return a;
}

// f32 -> f16 -> f32 rounds to nearest even on both; f32 -> int truncates.
TEST(CudaCast, FloatHalfAndIntegerCasts) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {3, 77});
  b.output(b.node("Cast", {b.node("Cast", {x}, cast_to(DType::f16))}, cast_to(DType::f32)));
  b.output(b.node("Cast", {x}, cast_to(DType::i32)));
  b.output(b.node("Cast", {x}, cast_to(DType::i64)));
  b.output(b.node("Cast", {b.node("Cast", {x}, cast_to(DType::i64))}, cast_to(DType::f32)));
  auto [cpu, gpu] = run_both(b.g, {random_f32({3, 77}, 9, -300.f, 300.f)});
  ASSERT_EQ(gpu.size(), 4u);
  const char* what[] = {"f32->f16->f32", "f32->i32", "f32->i64", "f32->i64->f32"};
  for (size_t i = 0; i < 4; ++i) expect_identical(gpu[i], cpu[i], what[i]);
}

// bf16 to and from f32, f16 and integers: one round to nearest even per
// narrowing, as on the CPU (core/half.h), so the results are identical.
TEST(CudaCast, Bf16Casts) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {3, 77});
  auto cast = [&](ValueId v, DType t) { return b.node("Cast", {v}, cast_to(t)); };
  ValueId bf = cast(x, DType::bf16);
  b.output(cast(bf, DType::f32));
  b.output(cast(cast(cast(x, DType::f16), DType::bf16), DType::f32));
  b.output(cast(cast(bf, DType::f16), DType::f32));
  b.output(cast(bf, DType::i32));
  b.output(cast(cast(cast(x, DType::i64), DType::bf16), DType::f32));
  auto [cpu, gpu] = run_both(b.g, {random_f32({3, 77}, 10, -300.f, 300.f)});
  ASSERT_EQ(gpu.size(), 5u);
  const char* what[] = {"f32->bf16->f32", "f32->f16->bf16->f32", "f32->bf16->f16->f32", "f32->bf16->i32",
                        "f32->i64->bf16->f32"};
  for (size_t i = 0; i < 5; ++i) expect_identical(gpu[i], cpu[i], what[i]);
}

}  // namespace
}  // namespace tandem::testing
