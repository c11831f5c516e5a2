// Ops that compute on values: Cast/CastLike, comparisons, Where, reductions
// and ArgMax on the CPU backend, vs numpy (and PyTorch for bfloat16, which
// numpy lacks) through /usr/bin/python3. Exact unless a test says otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"
#include "tests/shape_test_util.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor cast(const Tensor& x, int64_t onnx_to) { return run("Cast", attrs({{"to", onnx_to}}), {x})[0]; }

// Floats that exercise rounding: ties, f16 subnormals, overflow, inf, NaN, -0.
Tensor awkward_floats() {
  std::vector<float> v = {0.f, -0.f, 1.f, -2.5f, 65504.f, 65520.f, 1e6f, -1e6f, 6e-8f, 3e-5f, -6.1e-5f,
                          1.0009765625f, 1.00048828125f, 3.14159265f, INFINITY, -INFINITY, NAN,
                          1.00390625f, 1.01171875f, 255.5f, -128.75f, 1e-40f};
  Tensor t = random_tensor({64}, 21, -300.f, 300.f);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

TEST(CastOps, FloatToHalfAndBackVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = awkward_floats();
  Tensor h = cast(x, 10);
  ref.add(h, "r = x0.astype(np.float16)", {x}, "f32->f16");
  ref.add(cast(h, 1), "r = x0.astype(np.float16).astype(np.float32)", {x}, "f16->f32");
  ref.add(cast(x, 11), "r = x0.astype(np.float64)", {x}, "f32->f64");
  expect_same(cast(cast(x, 11), 1), x, "f32->f64->f32 round trip");
  ref.check();
}

TEST(CastOps, FloatToBfloat16VsTorch) {
  REQUIRE_NUMPY();
  Tensor x = awkward_floats();
  Tensor b = cast(x, 16);
  Tensor want = numpy_eval(
      "import torch\nr = torch.from_numpy(x0).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)",
      {x}, DType::bf16);
  // Bits must match, except that torch writes its own NaN pattern.
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint16_t got = static_cast<const uint16_t*>(b.raw())[i], ref = static_cast<const uint16_t*>(want.raw())[i];
    if (std::isnan(x.data<float>()[i])) {
      EXPECT_TRUE(std::isnan(bf16_to_float(got))) << i;
    } else {
      EXPECT_EQ(got, ref) << "f32->bf16 (round to nearest even) at " << i << " x=" << x.data<float>()[i];
    }
  }
  Tensor back = cast(b, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint16_t bits = static_cast<const uint16_t*>(b.raw())[i];
    float f = back.data<float>()[i];
    uint32_t u = uint32_t(bits) << 16;
    float expect;
    std::memcpy(&expect, &u, 4);
    if (std::isnan(expect)) {
      ASSERT_TRUE(std::isnan(f)) << i;
    } else {
      ASSERT_EQ(f, expect) << i;  // bf16 -> f32 is exact: the bits shifted up
    }
  }
}

TEST(CastOps, IntegerAndBoolConversionsVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({50}, 22, -120.f, 120.f);
  x.data<float>()[0] = -0.99f;
  x.data<float>()[1] = 0.f;
  ref.add(cast(x, 6), "r = x0.astype(np.int32)", {x}, "f32->i32 (truncates)");
  ref.add(cast(x, 3), "r = x0.astype(np.int8)", {x}, "f32->i8");
  ref.add(cast(x, 9), "r = x0.astype(bool)", {x}, "f32->bool");
  Tensor big = i64s({(int64_t(1) << 53) + 1, -7, 0, 123456789012345, std::numeric_limits<int64_t>::min()});
  ref.add(cast(big, 1), "r = x0.astype(np.float32)", {big}, "i64->f32");
  ref.add(cast(big, 6), "r = x0.astype(np.int32)", {big}, "i64->i32 wraps");
  ref.add(cast(big, 2), "r = x0.astype(np.uint8)", {big}, "i64->u8 wraps");
  Tensor flags = cast(big, 9);
  ref.add(cast(flags, 7), "r = x0.astype(bool).astype(np.int64)", {big}, "bool->i64");
  ref.add(cast(flags, 10), "r = x0.astype(bool).astype(np.float16)", {big}, "bool->f16");
  ref.add(cast(cast(x, 9), 1), "r = x0.astype(bool).astype(np.float32)", {x}, "bool->f32");
  ref.check();
}

// ONNX leaves out-of-range float -> int undefined; tandem saturates, NaN -> 0.
TEST(CastOps, FloatToIntSaturates) {
  Tensor x = Tensor::from_vector<float>({1e10f, -1e10f, NAN, INFINITY, -INFINITY, 300.f, -3.7f}, {7});
  EXPECT_EQ(cast(x, 6).to_int_vector(), (std::vector<int64_t>{INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 300, -3}));
  EXPECT_EQ(cast(x, 2).to_int_vector(), (std::vector<int64_t>{255, 0, 0, 255, 0, 255, 0}));
  EXPECT_EQ(cast(x, 7).int_at(0), 10000000000);
}

TEST(CastOps, CastLikeAndBadTargets) {
  Tensor x = Tensor::from_vector<float>({1.5f, -2.f}, {2});
  Tensor like = Tensor::from_vector<int64_t>({0}, {1});
  OpCall c = op_call("CastLike", {}, {x, like});
  Tensor y = run_op_cpu(c)[0];
  EXPECT_EQ(y.dtype(), DType::i64);
  EXPECT_EQ(y.to_int_vector(), (std::vector<int64_t>{1, -2}));
  for (int64_t bad : {0, 4, 5, 8, 12, 13, 14, 15, 17, 999, -1})
    EXPECT_THROW(cast(x, bad), Error) << bad;
  EXPECT_THROW(run("Cast", {}, {x}), Error);                                  // no `to`
  EXPECT_THROW(run("Cast", attrs({{"to", 1.0f}}), {x}), Error);               // wrong type
}

TEST(CompareOps, BroadcastingVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor a = random_tensor({3, 1, 5}, 23, -2.f, 2.f), b = random_tensor({4, 1}, 24, -2.f, 2.f);
  a.data<float>()[0] = NAN;
  b.data<float>()[1] = a.data<float>()[2];  // one exact tie
  const char* np_ops[][2] = {{"Equal", "=="}, {"Less", "<"}, {"Greater", ">"},
                             {"LessOrEqual", "<="}, {"GreaterOrEqual", ">="}};
  for (auto& [op, sym] : np_ops) {
    OpCall c = op_call(op, {}, {a, b});
    ref.add(run_op_cpu(c)[0], std::string("r = x0 ") + sym + " x1", {a, b}, op);
  }
  Tensor ia = i64s({5, -3, 9}), ib = Tensor::from_vector<int64_t>({-3}, {});
  OpCall c = op_call("Greater", {}, {ia, ib});
  ref.add(run_op_cpu(c)[0], "r = x0 > x1", {ia, ib}, "i64 scalar");
  OpCall mixed = op_call("Equal", {}, {a, ia});
  EXPECT_THROW(run_op_cpu(mixed), Error);
  ref.check();
}

// Operands of one shape that arrive blocked or channels-last are compared,
// and the mask cast to float, in that layout (the detector's peak test after
// its max pooling); the mask leaves it as bytes. Against numpy, with ties.
TEST(CompareOps, SameShapeOperandsStayInTheirLayout) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  const Shape shape{2, 32, 6, 5};
  Tensor a = random_tensor(shape, 27, -2.f, 2.f), b = random_tensor(shape, 28, -2.f, 2.f);
  for (int64_t i = 0; i < a.numel(); i += 3) b.data<float>()[i] = a.data<float>()[i];
  for (Layout l : {Layout::blocked16, Layout::blocked8, Layout::nhwc}) {
    const TensorDesc d{DType::f32, shape, l};
    EXPECT_EQ(planned_output_layout("Equal", {}, {d, d}), l) << d.str();
    EXPECT_EQ(planned_output_layout("Cast", attrs({{"to", int64_t(1)}}),
                                    {TensorDesc{DType::boolean, shape, l}}),
              l)
        << d.str();
    OpCall eq = op_call("Equal", {}, {a, b});
    eq.input_layout = l;
    OpCall ge = op_call("GreaterOrEqual", {}, {a, b});
    ge.input_layout = l;
    const Tensor mask = run_op_cpu(eq)[0];
    ref.add(mask, "r = x0 == x1", {a, b}, "Equal in " + d.str());
    ref.add(run_op_cpu(ge)[0], "r = x0 >= x1", {a, b}, "GreaterOrEqual in " + d.str());
    OpCall to_float = op_call("Cast", attrs({{"to", int64_t(1)}}), {mask});
    to_float.input_layout = l;
    ref.add(run_op_cpu(to_float)[0], "r = (x0 == x1).astype(np.float32)", {a, b},
            "Cast in " + d.str());
  }
  // Channels that leave a block part empty: plain, as before.
  const TensorDesc padded{DType::f32, {2, 20, 6, 5}, Layout::blocked16};
  EXPECT_EQ(planned_output_layout("Equal", {}, {padded, padded}), Layout::plain);
  ref.check();
}

TEST(CompareOps, WhereVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor a = random_tensor({2, 3, 4}, 25), b = random_tensor({3, 1}, 26);
  OpCall lt = op_call("Less", {}, {a, Tensor::from_vector<float>({0.f}, {})});
  Tensor cond = run_op_cpu(lt)[0];
  OpCall w = op_call("Where", {}, {cond, a, b});
  ref.add(run_op_cpu(w)[0], "r = np.where(x0 < 0, x0, x1)", {a, b}, "f32");
  Tensor ia = i64s({1, 2, 3, 4}), ib = Tensor::from_vector<int64_t>({-1}, {});
  OpCall wi = op_call("Where", {}, {cond, ia, ib});
  ref.add(run_op_cpu(wi)[0], "r = np.where(x0 < 0, x1, x2)", {a, ia, ib}, "i64");
  OpCall bad = op_call("Where", {}, {a, a, b});  // condition not bool
  EXPECT_THROW(run_op_cpu(bad), Error);
  ref.check();
}

// Tolerance for float reductions: 1e-6 relative (double accumulation vs numpy's pairwise float32 sum).
TEST(ReduceOps, AxesKeepdimsAndOpsetsVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({2, 3, 4, 5}, 27, -3.f, 3.f);
  Attributes k0 = attrs({{"keepdims", int64_t(0)}});
  Attributes axes_attr = attrs({{"axes", std::vector<int64_t>{1, -1}}});
  Tensor mean = run("ReduceMean", axes_attr, {x}, 13)[0];
  ref.add(mean, "r = x0.mean(axis=(1, 3), keepdims=True)", {x}, "mean", 1e-6);
  Tensor sum = run("ReduceSum", k0, {x, i64s({-2, 0})}, 13)[0];
  ref.add(sum, "r = x0.sum(axis=(0, 2))", {x}, "sum-13 input axes", 1e-6);
  Tensor max18 = run("ReduceMax", k0, {x, i64s({3})}, 18)[0];
  ref.add(max18, "r = x0.max(axis=3)", {x}, "max-18 input axes");
  Tensor all = run("ReduceMin", {}, {x}, 13)[0];
  ref.add(all, "r = x0.min(keepdims=True)", {x}, "min over all");
  Tensor noop = run("ReduceSum", attrs({{"noop_with_empty_axes", int64_t(1)}}), {x, i64s({})}, 13)[0];
  expect_same(noop, x, "noop_with_empty_axes");
  Tensor xi = i64s({(int64_t(1) << 60), 3, -(int64_t(1) << 60), 9});
  ref.add(run("ReduceSum", k0, {xi}, 13)[0], "r = x0.sum()", {xi}, "i64 exact");
  Tensor nan = x.clone();
  nan.data<float>()[7] = NAN;
  Tensor nmax = run("ReduceMax", attrs({{"axes", std::vector<int64_t>{3}}}), {nan}, 13)[0];
  ref.add(nmax, "r = x0.max(axis=3, keepdims=True)", {nan}, "NaN propagates");
  ref.check();
}

// Large reductions over one contiguous block of axes take the threaded f32
// fast path (cpu/reduce_block.cpp): runs longer than its 256-element f32
// partial sums, column chunks, extent-1 axes between reduced ones, NaN.
TEST(ReduceOps, ContiguousBlocksVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({2, 67, 1, 37, 29}, 31, -2.f, 5.f);
  Attributes k0 = attrs({{"keepdims", int64_t(0)}});
  ref.add(run("ReduceMean", attrs({{"axes", std::vector<int64_t>{2, 3, 4}}}), {x}, 13)[0],
          "r = x0.astype(np.float64).mean(axis=(2, 3, 4), keepdims=True).astype(np.float32)", {x}, "mean over H,W", 1e-6);
  ref.add(run("ReduceSum", k0, {x, i64s({1, 2})}, 13)[0], "r = x0.astype(np.float64).sum(axis=(1, 2)).astype(np.float32)",
          {x}, "sum over C (columns)", 1e-6);
  ref.add(run("ReduceMean", k0, {x, i64s({0})}, 18)[0], "r = x0.mean(axis=0)", {x}, "mean over N", 1e-6);
  ref.add(run("ReduceMax", k0, {x, i64s({1, 2, 3})}, 18)[0], "r = x0.max(axis=(1, 2, 3))", {x}, "max inner columns");
  Tensor nan = x.clone();
  nan.data<float>()[5000] = NAN;
  ref.add(run("ReduceMin", k0, {nan, i64s({3, 4})}, 18)[0], "r = x0.min(axis=(3, 4))", {nan}, "NaN propagates (rows)");
  ref.add(run("ReduceSum", k0, {nan, i64s({0, 1})}, 18)[0], "r = x0.astype(np.float64).sum(axis=(0, 1)).astype(np.float32)",
          {nan}, "NaN propagates (columns)", 1e-6);
  ref.check();
}

// A reduction over H and W of a tensor in nChw16c, nChw8c or nhwc is done in
// that layout (a squeeze-excite mean after a blocked convolution), channel
// counts that leave a block part empty included; each against numpy.
TEST(ReduceOps, SpatialReductionsInTheLayoutTheyArriveIn) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  int seed = 40;
  for (const Shape& shape : {Shape{2, 72, 5, 7}, Shape{3, 32, 16, 16}, Shape{1, 4, 9, 3}})
    for (Layout l : {Layout::blocked16, Layout::blocked8, Layout::nhwc}) {
      const std::string what = TensorDesc{DType::f32, shape, l}.str();
      Tensor x = random_tensor(shape, uint64_t(++seed), -2.f, 5.f);
      const Attributes hw = attrs({{"axes", std::vector<int64_t>{2, 3}}});
      EXPECT_EQ(planned_output_layout("ReduceMean", hw, {TensorDesc{DType::f32, shape, l}}), l)
          << what;
      OpCall mean = make_call("ReduceMean", hw, {x}, {});
      mean.opset = 13, mean.input_layout = l;
      OpCall max = make_call("ReduceMax", hw, {x}, {});
      max.opset = 13, max.input_layout = l;
      ref.add(run_op_cpu(mean)[0],
              "r = x0.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32)", {x},
              "mean over H,W of " + what, 1e-6);
      ref.add(run_op_cpu(max)[0], "r = x0.max(axis=(2, 3), keepdims=True)", {x},
              "max over H,W of " + what);
    }
  ref.check();
}

TEST(ReduceOps, RejectsHostileAxes) {
  Tensor x = random_tensor({2, 3}, 28);
  EXPECT_THROW(run("ReduceMean", attrs({{"axes", std::vector<int64_t>{2}}}), {x}, 13), Error);
  EXPECT_THROW(run("ReduceMean", attrs({{"axes", std::vector<int64_t>{0, -2}}}), {x}, 13), Error);
  EXPECT_THROW(run("ReduceSum", {}, {x, i64s({-3})}, 13), Error);
  EXPECT_THROW(run("ReduceSum", {}, {x, Tensor::from_vector<float>({0.f}, {1})}, 13), Error);
  EXPECT_THROW(run("ArgMax", attrs({{"axis", int64_t(2)}}), {x}), Error);
}

TEST(ReduceOps, ArgMaxTiesAndSelectLastIndexVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = Tensor::empty(DType::f32, {3, 6, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 7) % 5);  // many ties
  Tensor first = run("ArgMax", attrs({{"axis", int64_t(1)}}), {x})[0];
  ref.add(first, "r = np.argmax(x0, axis=1, keepdims=True)", {x}, "first");
  Tensor last = run("ArgMax", attrs({{"axis", int64_t(-2)}, {"keepdims", int64_t(0)},
                                     {"select_last_index", int64_t(1)}}), {x})[0];
  ref.add(last, "r = x0.shape[1] - 1 - np.argmax(x0[:, ::-1, :], axis=1)", {x}, "last");
  Tensor amin = run("ArgMin", attrs({{"axis", int64_t(2)}}), {x})[0];
  ref.add(amin, "r = np.argmin(x0, axis=2, keepdims=True)", {x}, "ArgMin");
  ref.check();
}

}  // namespace
