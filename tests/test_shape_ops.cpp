// Reshape family, Shape/Size, Constant/ConstantOfShape/Range on the CPU
// backend: ONNX semantics checked against values written out in each test
// (exact), views checked to be zero-copy, and hostile attributes/constants
// checked to throw tandem::Error.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "cpu/cpu_backend.h"
#include "ops/schema.h"
#include "tests/shape_test_util.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Shape shape_of(const std::string& op, Attributes a, std::vector<Tensor> in, int opset = 17) {
  return run(op, std::move(a), std::move(in), opset)[0].shape();
}

std::vector<int64_t> values(const Tensor& t) { return t.to_int_vector(); }

TEST(ShapeOps, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor x = random_tensor({2, 3, 4}, 1);
  EXPECT_EQ(shape_of("Reshape", {}, {x, i64s({0, -1})}), (Shape{2, 12}));
  EXPECT_EQ(shape_of("Reshape", {}, {x, i64s({-1, 0, 2})}), (Shape{4, 3, 2}));
  EXPECT_EQ(shape_of("Reshape", {}, {x, i64s({24})}), (Shape{24}));
  // allowzero (opset 14): 0 is a real extent; needs an empty input.
  Tensor empty = Tensor::zeros(DType::f32, {0, 3});
  EXPECT_EQ(shape_of("Reshape", attrs({{"allowzero", int64_t(1)}}), {empty, i64s({3, 0})}, 14), (Shape{3, 0}));
  // Before opset 14 allowzero does not exist: 0 copies.
  EXPECT_EQ(shape_of("Reshape", attrs({{"allowzero", int64_t(1)}}), {empty, i64s({0, 3})}, 13), (Shape{0, 3}));
}

TEST(ShapeOps, ReshapeRejectsBadShapes) {
  Tensor x = random_tensor({2, 3, 4}, 1);
  EXPECT_THROW(run("Reshape", {}, {x, i64s({-1, -1})}), Error);
  EXPECT_THROW(run("Reshape", {}, {x, i64s({-2, 12})}), Error);
  EXPECT_THROW(run("Reshape", {}, {x, i64s({5, 5})}), Error);
  EXPECT_THROW(run("Reshape", {}, {x, i64s({-1, 5})}), Error);
  EXPECT_THROW(run("Reshape", {}, {x, i64s({0, 0, 0, 0})}), Error);  // 0 past the input rank
  EXPECT_THROW(run("Reshape", attrs({{"allowzero", int64_t(1)}}), {x, i64s({0, -1})}, 14), Error);
  Tensor big = i64s({std::numeric_limits<int64_t>::max(), 4});
  EXPECT_THROW(run("Reshape", {}, {x, big}), Error);
  // A computed (non-constant) shape cannot be inferred.
  OpCall c = op_call("Reshape", {}, {x, i64s({24})});
  EXPECT_THROW(run_op_cpu(c), Error);
}

TEST(ShapeOps, ViewsAreZeroCopy) {
  Tensor x = random_tensor({2, 1, 3, 1}, 2);
  struct Case { const char* op; Attributes a; std::vector<Tensor> in; Shape want; int opset; };
  std::vector<Case> cases = {
      {"Reshape", {}, {x, i64s({3, 2})}, {3, 2}, 17},
      {"Flatten", attrs({{"axis", int64_t(-1)}}), {x}, {6, 1}, 17},
      {"Flatten", attrs({{"axis", int64_t(0)}}), {x}, {1, 6}, 17},
      {"Squeeze", {}, {x}, {2, 3}, 17},
      {"Squeeze", {}, {x, i64s({-1})}, {2, 1, 3}, 13},
      {"Squeeze", attrs({{"axes", std::vector<int64_t>{1}}}), {x}, {2, 3, 1}, 11},
      {"Unsqueeze", {}, {x, i64s({0, -1})}, {1, 2, 1, 3, 1, 1}, 13},
      {"Unsqueeze", attrs({{"axes", std::vector<int64_t>{2}}}), {x}, {2, 1, 1, 3, 1}, 11},
  };
  for (Case& c : cases) {
    std::vector<Tensor> out = run(c.op, c.a, c.in, c.opset);
    EXPECT_EQ(out[0].shape(), c.want) << c.op;
    EXPECT_EQ(out[0].raw(), x.raw()) << c.op << " copied its input";
    // The plan itself: a view of input 0, no kernel, plain layouts.
    OpDesc d;
    d.op_type = c.op;
    d.attrs = &c.a;
    d.opset = c.opset;
    for (size_t i = 0; i < c.in.size(); ++i) {
      d.inputs.push_back(c.in[i].desc());
      d.present.push_back(true);
      d.constants.push_back(i ? &c.in[i] : nullptr);
    }
    d.outputs = {TensorDesc{DType::f32, c.want}};
    KernelPlan p = cpu::cpu_backend().prepare(d);
    EXPECT_EQ(p.alias_input, 0) << c.op;
    EXPECT_EQ(p.kernel, nullptr) << c.op;
    EXPECT_EQ(p.input_layouts[0], Layout::plain) << c.op;
  }
}

TEST(ShapeOps, SqueezeUnsqueezeOpsetDifferencesAndErrors) {
  Tensor x = random_tensor({2, 1, 3}, 3);
  // Opset 13 reads axes from the input, not the attribute (both given: input wins).
  EXPECT_EQ(shape_of("Squeeze", attrs({{"axes", std::vector<int64_t>{0}}}), {x, i64s({1})}, 13), (Shape{2, 3}));
  EXPECT_THROW(run("Squeeze", {}, {x, i64s({0})}, 13), Error);      // extent 2 is not 1
  EXPECT_THROW(run("Squeeze", {}, {x, i64s({3})}, 13), Error);      // out of range
  EXPECT_THROW(run("Squeeze", {}, {x, i64s({1, -2})}, 13), Error);  // repeated
  EXPECT_THROW(run("Unsqueeze", {}, {x, i64s({4})}, 13), Error);    // output rank is 4
  EXPECT_THROW(run("Unsqueeze", {}, {x, i64s({0, -5})}, 13), Error);  // both mean axis 0 of 5
  EXPECT_THROW(run("Unsqueeze", {}, {x}, 13), Error);               // axes required
  EXPECT_THROW(run("Unsqueeze", attrs({{"axes", std::string("0")}}), {x}, 11), Error);  // wrong type
  EXPECT_THROW(run("Flatten", attrs({{"axis", int64_t(4)}}), {x}), Error);
}

TEST(ShapeOps, ShapeAndSizeFromDescAlone) {
  Tensor x = random_tensor({2, 19, 5, 3}, 4);
  EXPECT_EQ(values(run("Shape", {}, {x})[0]), (std::vector<int64_t>{2, 19, 5, 3}));
  EXPECT_EQ(values(run("Shape", attrs({{"start", int64_t(1)}, {"end", int64_t(-1)}}), {x}, 15)[0]),
            (std::vector<int64_t>{19, 5}));
  EXPECT_EQ(values(run("Shape", attrs({{"start", int64_t(-10)}, {"end", int64_t(10)}}), {x}, 15)[0]),
            (std::vector<int64_t>{2, 19, 5, 3}));
  EXPECT_EQ(run("Shape", attrs({{"start", int64_t(3)}, {"end", int64_t(1)}}), {x}, 15)[0].numel(), 0);
  // Opset 13 has no start/end: the attributes are ignored.
  EXPECT_EQ(run("Shape", attrs({{"start", int64_t(1)}}), {x}, 13)[0].numel(), 4);
  Tensor size = run("Size", {}, {x})[0];
  EXPECT_EQ(size.shape(), Shape{});
  EXPECT_EQ(size.int_at(0), 2 * 19 * 5 * 3);
  // A blocked input is taken as it is (Shape never reads the bytes).
  OpCall c = op_call("Shape", {}, {x});
  c.input_layout = Layout::blocked16;
  EXPECT_EQ(values(run_op_cpu(c)[0]), (std::vector<int64_t>{2, 19, 5, 3}));
}

// The chain exporters emit for x.view(x.size(0), -1), evaluated op by op
// with constant inputs as the graph's folding pass does.
TEST(ShapeOps, ShapeGatherUnsqueezeReshapeChainFolds) {
  Tensor x = random_tensor({4, 8, 2, 2}, 5);
  auto all_const = [](const std::string& op, Attributes a, std::vector<Tensor> in, int opset = 13) {
    OpCall c = op_call(op, std::move(a), std::move(in));
    c.constant.assign(c.inputs.size(), true);
    c.opset = opset;
    return run_op_cpu(c)[0];
  };
  Tensor shape = all_const("Shape", {}, {x});
  Tensor batch = all_const("Gather", attrs({{"axis", int64_t(0)}}), {shape, Tensor::from_vector<int64_t>({0}, {})});
  EXPECT_EQ(batch.shape(), Shape{});
  Tensor b1 = all_const("Unsqueeze", {}, {batch, i64s({0})});
  EXPECT_EQ(values(b1), (std::vector<int64_t>{4}));
  Tensor target = i64s({b1.int_at(0), -1});  // Concat belongs to another op family
  EXPECT_EQ(shape_of("Reshape", {}, {x, target}), (Shape{4, 32}));
}

TEST(ShapeOps, ConstantAttributes) {
  Tensor v = Tensor::from_vector<int32_t>({7, -8, 9}, {3, 1});
  Tensor a = run("Constant", attrs({{"value", v}}), {})[0];
  EXPECT_EQ(a.desc(), v.desc());
  EXPECT_EQ(values(a), (std::vector<int64_t>{7, -8, 9}));
  Tensor f = run("Constant", attrs({{"value_float", 2.5f}}), {})[0];
  EXPECT_EQ(f.shape(), Shape{});
  EXPECT_EQ(f.scalar_at(0), 2.5);
  Tensor fs = run("Constant", attrs({{"value_floats", std::vector<float>{1.f, -2.f}}}), {})[0];
  EXPECT_EQ(fs.dtype(), DType::f32);
  EXPECT_EQ(fs.scalar_at(1), -2.0);
  Tensor i = run("Constant", attrs({{"value_int", int64_t(-3)}}), {})[0];
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.int_at(0), -3);
  EXPECT_EQ(values(run("Constant", attrs({{"value_ints", std::vector<int64_t>{4, 5}}}), {})[0]),
            (std::vector<int64_t>{4, 5}));
  EXPECT_THROW(run("Constant", {}, {}), Error);
  EXPECT_THROW(run("Constant", attrs({{"value_int", int64_t(1)}, {"value_float", 1.f}}), {}), Error);
  EXPECT_THROW(run("Constant", attrs({{"value_string", std::string("x")}}), {}), Error);
}

TEST(ShapeOps, ConstantOfShape) {
  auto fill = [](Attributes a, std::vector<Tensor> in) {
    OpCall c = op_call("ConstantOfShape", std::move(a), std::move(in));
    c.constant = {true};
    return std::vector<Tensor>{run_op_cpu(c)};
  };
  Tensor z = fill({}, {i64s({2, 3})})[0];
  EXPECT_EQ(z.desc(), (TensorDesc{DType::f32, {2, 3}}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(z.scalar_at(i), 0.0);
  Tensor v = Tensor::from_vector<int64_t>({-7}, {1});
  Tensor s = fill(attrs({{"value", v}}), {i64s({4})})[0];
  EXPECT_EQ(values(s), (std::vector<int64_t>{-7, -7, -7, -7}));
  EXPECT_EQ(fill({}, {i64s({0, 5})})[0].numel(), 0);
  EXPECT_THROW(fill({}, {i64s({2, -1})}), Error);
  EXPECT_THROW(fill({}, {i64s({int64_t(1) << 40, int64_t(1) << 40})}), Error);
  EXPECT_THROW(fill(attrs({{"value", i64s({1, 2})}}), {i64s({2})}), Error);
}

TEST(ShapeOps, RangeMatchesOnnxFormula) {
  auto range = [](Tensor a, Tensor b, Tensor c) {
    OpCall call = op_call("Range", {}, {a, b, c});
    call.constant = {true, true, true};
    return run_op_cpu(call)[0];
  };
  auto i32 = [](int32_t v) { return Tensor::from_vector<int32_t>({v}, {}); };
  auto f32 = [](float v) { return Tensor::from_vector<float>({v}, {}); };
  EXPECT_EQ(values(range(i32(10), i32(4), i32(-3))), (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(range(i32(1), i32(1), i32(1)).numel(), 0);
  EXPECT_EQ(range(i32(5), i32(1), i32(1)).numel(), 0);
  Tensor f = range(f32(1.f), f32(2.f), f32(0.25f));
  ASSERT_EQ(f.numel(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(f.scalar_at(i), 1.0 + 0.25 * double(i));
  EXPECT_THROW(range(i32(0), i32(5), i32(0)), Error);
  EXPECT_THROW(range(f32(0.f), f32(1e30f), f32(1e-30f)), Error);  // too many elements
  EXPECT_THROW(range(i32(0), f32(5.f), i32(1)), Error);             // mixed dtypes
}

// The graph layer infers before a session fixes the batch: -1 must survive.
TEST(ShapeOps, InferenceKeepsUnknownExtents) {
  auto infer = [](const std::string& op, const Attributes& a, std::vector<TensorDesc> in,
                  std::vector<const Tensor*> consts) {
    ops::InferContext c;
    c.op_type = op;
    c.attrs = &a;
    c.inputs = in;
    c.present.assign(in.size(), true);
    c.constants = consts;
    return ops::infer_outputs(c)[0].shape;
  };
  TensorDesc x{DType::f32, {-1, 8, 2, 2}};
  Tensor spec = i64s({0, -1}), spec2 = i64s({-1, 32});
  Attributes none;
  EXPECT_EQ(infer("Reshape", none, {x, spec.desc()}, {nullptr, &spec}), (Shape{-1, -1}));
  EXPECT_EQ(infer("Reshape", none, {x, spec2.desc()}, {nullptr, &spec2}), (Shape{-1, 32}));
  EXPECT_EQ(infer("Flatten", none, {x}, {nullptr}), (Shape{-1, 32}));
  EXPECT_EQ(infer("Shape", none, {x}, {nullptr}), (Shape{4}));
  Attributes perm = attrs({{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  EXPECT_EQ(infer("Transpose", perm, {x}, {nullptr}), (Shape{-1, 2, 2, 8}));
  Tensor shape = i64s({1, 8, 1, 1});
  EXPECT_EQ(infer("Expand", none, {x, shape.desc()}, {nullptr, &shape}), (Shape{-1, 8, 2, 2}));
}

}  // namespace
