// Concat on the CPU backend vs an index-mapping loop written here (output
// element = element of the input whose range along the axis holds it), for
// f32 4-D in plain/nChw16c/nhwc (oneDNN concat) and any dtype/rank (memcpy
// path: int64 shape vectors, bool, zero-length inputs). Exact comparison:
// concatenation copies values.
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "ops/schema.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

OpCall make_call(std::vector<Tensor> inputs, int64_t axis) {
  OpCall c;
  c.op_type = "Concat";
  c.attrs.set("axis", axis);
  c.inputs = std::move(inputs);
  return c;
}

// Expected value of output element i (as double).
std::vector<double> reference_concat(const std::vector<Tensor>& in, int64_t axis, Shape* y_shape) {
  Shape y = in[0].shape();
  size_t a = size_t(axis < 0 ? axis + int64_t(y.size()) : axis);
  y[a] = 0;
  for (const Tensor& t : in) y[a] += t.shape()[a];
  int64_t inner = 1;
  for (size_t d = a + 1; d < y.size(); ++d) inner *= y[d];
  std::vector<double> out;
  int64_t outer = shape_numel(y) / std::max<int64_t>(1, y[a] * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& t : in) {
      int64_t row = t.shape()[a] * inner;
      for (int64_t j = 0; j < row; ++j) out.push_back(t.scalar_at(o * row + j));
    }
  *y_shape = y;
  return out;
}

void check(const std::vector<Tensor>& in, int64_t axis, Layout layout = Layout::plain) {
  Shape ys;
  std::vector<double> ref = reference_concat(in, axis, &ys);
  OpCall c = make_call(in, axis);
  c.input_layout = layout;
  Tensor y = run_op_cpu(c)[0];
  std::string what = "axis " + std::to_string(axis) + " layout " + std::string(layout_name(layout));
  for (const Tensor& t : in) what += " " + t.desc().str();
  ASSERT_EQ(y.shape(), ys) << what;
  ASSERT_EQ(y.dtype(), in[0].dtype()) << what;
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.scalar_at(i), ref[size_t(i)]) << what << " at " << i;
}

Layout planned_layout(const std::vector<TensorDesc>& in, int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return planned_output_layout("Concat", a, in);
}

}  // namespace

TEST(CpuConcat, F32FourDimensionalInEveryLayout) {
  Tensor a = random_tensor({2, 16, 5, 6}, 1), b = random_tensor({2, 32, 5, 6}, 2), c = random_tensor({2, 16, 5, 6}, 3);
  Tensor odd = random_tensor({2, 20, 5, 6}, 4), odd2 = random_tensor({2, 12, 5, 6}, 5);
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::nhwc}) {
    check({a, b, c}, 1, l);
    check({odd, odd2, a}, 1, l);  // partial channel blocks: plain
    check({a, c}, 2, l);
    check({odd, odd}, 2, l);  // partial blocks along H
    check({a, random_tensor({2, 16, 5, 3}, 6)}, -1, l);
    check({a, c, random_tensor({1, 16, 5, 6}, 7)}, 0, l);
    check({b}, 1, l);
    // Parts of several 128 KB pieces a batch row, copied by many threads.
    check({random_tensor({3, 32, 40, 70}, 12), random_tensor({3, 48, 40, 70}, 13)}, 1, l);
  }
}

TEST(CpuConcat, AnyDtypeAndRankThroughCopies) {
  // Shape vectors as exporters build them: Concat(Shape[0:1], [-1]).
  check({Tensor::from_vector<int64_t>({4}, {1}), Tensor::from_vector<int64_t>({-1}, {1})}, 0);
  check({Tensor::from_vector<int64_t>({1, 2, 3}, {3}), Tensor::from_vector<int64_t>({}, {0}),
         Tensor::from_vector<int64_t>({9, 8}, {2})}, 0);
  check({Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::from_vector<int32_t>({7, 8}, {2, 1})}, 1);
  check({random_tensor({3, 4, 5}, 8), random_tensor({3, 2, 5}, 9)}, 1);
  check({random_tensor({3, 4, 5}, 8), random_tensor({3, 4, 1}, 9)}, 2);
  check({random_tensor({2, 0, 3, 3}, 10), random_tensor({2, 4, 3, 3}, 11)}, 1);
  Tensor flags = Tensor::empty(DType::boolean, {2});
  flags.data<bool>()[0] = true;
  flags.data<bool>()[1] = false;
  check({flags, flags}, 0);
  check({Tensor::from_vector<double>({1.5, -2.5}, {2}), Tensor::from_vector<double>({3.25}, {1})}, 0);
}

TEST(CpuConcat, LayoutFollowsBlockedInputsWhenChannelsFillBlocks) {
  auto f32 = [](int64_t c, Layout l) { return TensorDesc{DType::f32, {1, c, 14, 14}, l}; };
  Layout b16 = Layout::blocked16;
  EXPECT_EQ(planned_layout({f32(64, b16), f32(32, b16)}, 1), b16);
  EXPECT_EQ(planned_layout({f32(64, Layout::plain), f32(32, b16)}, 1), b16);
  EXPECT_EQ(planned_layout({f32(24, b16), f32(32, b16)}, 1), Layout::plain);
  EXPECT_EQ(planned_layout({f32(24, b16), f32(24, b16)}, 2), b16);
  EXPECT_EQ(planned_layout({f32(24, Layout::nhwc), f32(40, Layout::nhwc)}, 1), Layout::nhwc);
}

TEST(CpuConcat, RejectsMismatchedInputs) {
  EXPECT_THROW(run_op_cpu(make_call({random_tensor({2, 3}, 1), random_tensor({3, 3}, 2)}, 1)), Error);
  EXPECT_THROW(run_op_cpu(make_call({random_tensor({2, 3}, 1), random_tensor({2, 3, 1}, 2)}, 0)), Error);
  EXPECT_THROW(run_op_cpu(make_call({random_tensor({2, 3}, 1)}, 2)), Error);
  EXPECT_THROW(run_op_cpu(make_call({random_tensor({2, 3}, 1), Tensor::from_vector<int64_t>({1, 2, 3}, {1, 3})}, 0)),
               Error);
}
