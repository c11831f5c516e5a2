// add (with broadcasting), concat and flatten: fp32 forward and gradients
// against float64 definitions and their central finite differences
// (tolerances in tests/train/grad_check.h). Add's gradient for a broadcast
// input is dy summed over the broadcast axes; concat's is dy's slice.
#include <gtest/gtest.h>

#include "core/half.h"
#include "tests/train/grad_check.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// y = a + b with b (or a) broadcast along its extents of 1; same rank.
Doubles reference_add(const Shape& sa, const Shape& sb, const std::vector<Doubles>& in) {
  Shape y = broadcast_shapes(sa, sb);
  auto index = [&](const Shape& s, int64_t flat) {
    int64_t r = 0, stride = 1;
    for (size_t d = y.size(); d-- > 0;) {
      int64_t coord = flat % y[d];
      flat /= y[d];
      r += (s[d] == 1 ? 0 : coord) * stride;
      stride *= s[d];
    }
    return size_t(r);
  };
  Doubles out(size_t(shape_numel(y)));
  for (int64_t i = 0; i < shape_numel(y); ++i) out[size_t(i)] = in[0][index(sa, i)] + in[1][index(sb, i)];
  return out;
}

void run_add(const Shape& sa, const Shape& sb) {
  GradCase g;
  g.what = "add " + shape_str(sa) + " + " + shape_str(sb);
  g.inputs = {random_tensor(sa, 1), random_tensor(sb, 2)};
  g.op = [](const std::vector<train::Var>& v) { return train::add(v[0], v[1]); };
  g.reference = [&](const std::vector<Doubles>& in) { return reference_add(sa, sb, in); };
  check_gradients(g);
}

}  // namespace

TEST(GradAdd, SameShape) { run_add({2, 3, 4, 5}, {2, 3, 4, 5}); }
TEST(GradAdd, ChannelBias) { run_add({2, 3, 4, 5}, {1, 3, 1, 1}); }
TEST(GradAdd, BroadcastFirst) { run_add({1, 3, 1, 5}, {2, 3, 4, 5}); }
TEST(GradAdd, BatchBroadcast) { run_add({4, 6}, {1, 6}); }

TEST(GradAdd, ShapesNeitherMatchesIsAnError) {
  train::Var a(random_tensor({2, 1}, 1)), b(random_tensor({1, 3}, 2)), c(random_tensor({3}, 3));
  EXPECT_THROW(train::add(a, b), Error);
  EXPECT_THROW(train::add(a, c), Error);  // ranks differ
}

TEST(GradConcat, Channels) {
  GradCase g;
  g.what = "concat of [2,2,3,3], [2,1,3,3], [2,3,3,3] on channels";
  g.inputs = {random_tensor({2, 2, 3, 3}, 1), random_tensor({2, 1, 3, 3}, 2), random_tensor({2, 3, 3, 3}, 3)};
  g.op = [](const std::vector<train::Var>& v) { return train::concat(v, 1); };
  g.reference = [](const std::vector<Doubles>& in) {
    Doubles y;
    for (size_t n = 0; n < 2; ++n)
      for (size_t part = 0; part < 3; ++part) {
        size_t block = in[part].size() / 2;
        y.insert(y.end(), in[part].begin() + long(n * block), in[part].begin() + long((n + 1) * block));
      }
    return y;
  };
  check_gradients(g);
}

TEST(GradConcat, LastAxisAndPartlyFrozen) {
  GradCase g;
  g.what = "concat of [3,2] and [3,4] on axis -1, second frozen";
  g.inputs = {random_tensor({3, 2}, 1), random_tensor({3, 4}, 2)};
  g.differentiable = {true, false};
  g.op = [](const std::vector<train::Var>& v) { return train::concat(v, -1); };
  g.reference = [](const std::vector<Doubles>& in) {
    Doubles y;
    for (size_t r = 0; r < 3; ++r) {
      y.insert(y.end(), in[0].begin() + long(r * 2), in[0].begin() + long(r * 2 + 2));
      y.insert(y.end(), in[1].begin() + long(r * 4), in[1].begin() + long(r * 4 + 4));
    }
    return y;
  };
  check_gradients(g);
}

TEST(GradConcat, MismatchedExtentsAreAnError) {
  std::vector<train::Var> xs{train::Var(random_tensor({2, 2, 3, 3}, 1)), train::Var(random_tensor({2, 2, 4, 3}, 2))};
  EXPECT_THROW(train::concat(xs, 1), Error);
}

TEST(GradFlatten, KeepsValuesAndBatch) {
  GradCase g;
  g.what = "flatten [2,3,4,5] from 1";
  g.inputs = {random_tensor({2, 3, 4, 5}, 1)};
  g.op = [](const std::vector<train::Var>& v) {
    train::Var y = train::flatten(v[0]);
    EXPECT_EQ(y.shape(), (Shape{2, 60}));
    return y;
  };
  g.reference = [](const std::vector<Doubles>& in) { return in[0]; };
  check_gradients(g);
}

// cast: the value rounded to nearest even (core/half.h's rule, itself
// checked against the CUDA conversions), and the gradient converted back:
// through f32 -> low -> f32 the gradient arrives rounded to `low` once.
TEST(CastOp, RoundsTheValueAndTheGradientOnce) {
  for (DType low : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(low));
    train::Var x(random_tensor({3, 5}, 11, -300, 300), true);
    train::Var y = train::cast(x, low);
    ASSERT_EQ(y.value().dtype(), low);
    EXPECT_TRUE(train::cast(y, low).same(y)) << "a cast to its own dtype is the Var itself";
    train::Var z = train::to_f32(y);
    ASSERT_EQ(z.value().dtype(), DType::f32);
    Tensor seed = random_tensor({3, 5}, 12, -3, 3);
    train::backward(z, seed);
    ASSERT_EQ(x.grad().dtype(), DType::f32);
    auto round = [&](float v) {
      return low == DType::f16 ? f16_to_float(float_to_f16(v)) : bf16_to_float(float_to_bf16(v));
    };
    for (int64_t i = 0; i < 15; ++i) {
      EXPECT_EQ(z.value().data<float>()[i], round(x.value().data<float>()[i])) << i;
      EXPECT_EQ(x.grad().data<float>()[i], round(seed.data<float>()[i])) << i;
    }
  }
}

// Two inputs of different precisions add in f32 (PyTorch's promotion), and
// each gets its gradient in its own dtype.
TEST(CastOp, MixedPrecisionAddPromotesToF32) {
  train::Var a(random_tensor({2, 3}, 13), true);
  train::Var b16 = train::cast(train::Var(random_tensor({2, 3}, 14), true), DType::bf16);
  train::Var y = train::add(a, b16);
  EXPECT_EQ(y.value().dtype(), DType::f32);
  train::backward(y, random_tensor({2, 3}, 15));
  EXPECT_EQ(a.grad().dtype(), DType::f32);
}

// to_layout: nhwc holds element [n, c, h, w] at ((n * H + h) * W + w) * C + c;
// back to plain gives the values again, and the gradient comes back through
// both conversions unchanged. A [N, C, 1, 1] tensor is relabelled in place.
TEST(ConvertOp, NhwcHoldsTheValuesChannelsLast) {
  const int64_t N = 2, C = 3, H = 4, W = 5;
  train::Var x(random_tensor({N, C, H, W}, 16), true);
  train::Var y = train::to_layout(x, Layout::nhwc);
  ASSERT_EQ(y.value().layout(), Layout::nhwc);
  const float* xs = x.value().data<float>();
  const float* ys = y.value().data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          ASSERT_EQ(ys[((n * H + h) * W + w) * C + c], xs[((n * C + c) * H + h) * W + w])
              << n << c << h << w;
  train::Var z = train::to_layout(y, Layout::plain);
  Tensor seed = random_tensor({N, C, H, W}, 17);
  train::backward(z, seed);
  for (int64_t i = 0; i < x.value().numel(); ++i) {
    EXPECT_EQ(z.value().data<float>()[i], xs[i]) << i;
    EXPECT_EQ(x.grad().data<float>()[i], seed.data<float>()[i]) << i;
  }
  train::Var pooled(random_tensor({N, C, 1, 1}, 18), true);
  train::Var relabelled = train::to_layout(pooled, Layout::nhwc);
  EXPECT_EQ(relabelled.value().raw(), pooled.value().raw());
  EXPECT_EQ(relabelled.value().layout(), Layout::nhwc);
}
