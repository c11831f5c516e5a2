// Integer weights for post-training quantization: the input moments against
// a float64 im2col written out here, and the compensating rounding against
// round-to-nearest on what a layer is for, its output on the inputs it was
// calibrated on.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "graph/weight_rounding.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct Geometry {
  int64_t n = 2, c = 6, h = 9, w = 7, m = 4, kh = 3, kw = 3, group = 2;
  int64_t stride = 2, dilation = 2, pad = 1;
  int64_t oh() const { return (h + 2 * pad - dilation * (kh - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (kw - 1) - 1) / stride + 1; }
  int64_t k() const { return c / group * kh * kw; }
  Attributes attrs() const {
    Attributes a;
    a.set("group", group);
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    return a;
  }
};

// Every output position's input patch of group g, in float64: [positions][k].
std::vector<std::vector<double>> patches(const Geometry& q, const Tensor& x, int64_t g) {
  std::vector<std::vector<double>> r;
  const int64_t cg = q.c / q.group;
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t oy = 0; oy < q.oh(); ++oy)
      for (int64_t ox = 0; ox < q.ow(); ++ox) {
        std::vector<double> p;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t ky = 0; ky < q.kh; ++ky)
            for (int64_t kx = 0; kx < q.kw; ++kx) {
              const int64_t iy = oy * q.stride - q.pad + ky * q.dilation;
              const int64_t ix = ox * q.stride - q.pad + kx * q.dilation;
              const bool in = iy >= 0 && iy < q.h && ix >= 0 && ix < q.w;
              p.push_back(
                  in ? double(x.data<float>()[((n * q.c + g * cg + c) * q.h + iy) * q.w + ix])
                     : 0.0);
            }
        r.push_back(p);
      }
  return r;
}

// ||(W_int * scale - W) x|| / ||W x|| over every patch, in float64.
double output_error(const Geometry& q, const Tensor& w, const IntegerWeights& iw, const Tensor& x) {
  double num = 0, den = 0;
  const int64_t k = q.k(), per_group = q.m / q.group;
  for (int64_t g = 0; g < q.group; ++g)
    for (const std::vector<double>& p : patches(q, x, g))
      for (int64_t o = g * per_group; o < (g + 1) * per_group; ++o) {
        double want = 0, got = 0;
        for (int64_t i = 0; i < k; ++i) {
          want += double(w.data<float>()[o * k + i]) * p[size_t(i)];
          got += double(iw.values.data<int8_t>()[o * k + i]) * double(iw.scales[size_t(o)]) *
                 p[size_t(i)];
        }
        num += (got - want) * (got - want);
        den += want * want;
      }
  return std::sqrt(num / den);
}

}  // namespace

// A grouped, strided, dilated, padded convolution (one block a group) and
// a wide one whose 2,304 columns split into blocks of whole channels.
TEST(WeightRounding, InputMomentsMatchAFloat64Im2col) {
  Geometry wide;
  wide.c = 256, wide.m = 4, wide.group = 1, wide.h = wide.w = 5, wide.n = 1, wide.stride = 1,
  wide.dilation = 1;
  for (const Geometry& q : {Geometry{}, wide}) {
    const Tensor x = random_tensor({q.n, q.c, q.h, q.w}, 31);
    ConvInputMoments m(q.attrs(), x.shape(), {q.m, q.c / q.group, q.kh, q.kw}, 1 << 20);
    m.add(x);
    ASSERT_EQ(m.columns(), q.k());
    ASSERT_EQ(m.groups(), q.group);
    ASSERT_EQ(m.blocks(), q.k() <= ConvInputMoments::kMaxBlock ? 1 : 2);
    EXPECT_EQ(m.samples(), q.n * q.oh() * q.ow());
    int64_t covered = 0;
    for (int64_t b = 0; b < m.blocks(); ++b) covered += m.block_size(b);
    EXPECT_EQ(covered, q.k());
    EXPECT_EQ(m.block_columns() % (q.kh * q.kw), 0) << "blocks hold whole channels";
    for (int64_t g = 0; g < q.group; ++g) {
      const std::vector<std::vector<double>> ps = patches(q, x, g);
      for (int64_t blk = 0; blk < m.blocks(); ++blk) {
        const std::vector<double> got = m.moments(g, blk);
        const int64_t first = blk * m.block_columns(), n = m.block_size(blk);
        for (int64_t a = 0; a < n; ++a)
          for (int64_t b = 0; b < n; ++b) {
            double want = 0;
            for (const std::vector<double>& p : ps)
              want += p[size_t(first + a)] * p[size_t(first + b)];
            want /= double(ps.size());
            ASSERT_NEAR(got[size_t(a * n + b)], want, 1e-5 * (1 + std::fabs(want)))
                << g << " " << blk << " " << a << " " << b;
          }
      }
    }
  }
}

// Inputs whose channels are correlated, as a real layer's are: the
// compensating rounding moves the output on them far less than rounding
// each weight alone, and stays close on inputs it did not see.
TEST(WeightRounding, CompensatingMovesTheOutputLessThanNearest) {
  Geometry q;
  q.c = 16, q.m = 8, q.group = 1, q.h = q.w = 12, q.stride = q.dilation = 1, q.n = 4;
  auto correlated = [&](uint64_t seed) {
    const Tensor base = random_tensor({q.n, 2, q.h, q.w}, seed, 0.f, 1.f);
    const Tensor mix = random_tensor({q.c, 2}, 99, -1.f, 1.f);
    const Tensor noise = random_tensor({q.n, q.c, q.h, q.w}, seed + 1, -0.05f, 0.05f);
    Tensor x = Tensor::empty(DType::f32, {q.n, q.c, q.h, q.w});
    const int64_t plane = q.h * q.w;
    for (int64_t n = 0; n < q.n; ++n)
      for (int64_t c = 0; c < q.c; ++c)
        for (int64_t i = 0; i < plane; ++i)
          x.data<float>()[(n * q.c + c) * plane + i] =
              mix.data<float>()[c * 2] * base.data<float>()[(n * 2) * plane + i] +
              mix.data<float>()[c * 2 + 1] * base.data<float>()[(n * 2 + 1) * plane + i] +
              noise.data<float>()[(n * q.c + c) * plane + i];
    return x;
  };
  const Tensor w = random_tensor({q.m, q.c, q.kh, q.kw}, 41, -0.5f, 0.5f);
  const Tensor seen = correlated(50), unseen = correlated(60);
  ConvInputMoments m(q.attrs(), seen.shape(), w.shape());
  m.add(seen);
  const IntegerWeights nearest = round_to_nearest(w), compensating = round_compensating(w, m);
  EXPECT_EQ(compensating.scales, nearest.scales);
  const double e_near = output_error(q, w, nearest, seen),
               e_comp = output_error(q, w, compensating, seen);
  EXPECT_LT(e_comp, 0.5 * e_near) << e_comp << " against " << e_near;
  EXPECT_LT(output_error(q, w, compensating, unseen), 0.5 * output_error(q, w, nearest, unseen));
}

// An input that never fires leaves nothing to compensate with: the same
// integers as rounding to nearest.
TEST(WeightRounding, SilentInputsRoundToNearest) {
  const Geometry q;
  Tensor x = Tensor::empty(DType::f32, {q.n, q.c, q.h, q.w});
  std::fill(x.data<float>(), x.data<float>() + x.numel(), 0.f);
  const Tensor w = random_tensor({q.m, q.c / q.group, q.kh, q.kw}, 7);
  ConvInputMoments m(q.attrs(), x.shape(), w.shape());
  m.add(x);
  const IntegerWeights a = round_to_nearest(w), b = round_compensating(w, m);
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_EQ(a.values.data<int8_t>()[i], b.values.data<int8_t>()[i]);
}

TEST(WeightRounding, ATensorOfAnotherShapeIsAnError) {
  const Geometry q;
  ConvInputMoments m(q.attrs(), {q.n, q.c, q.h, q.w}, {q.m, q.c / q.group, q.kh, q.kw});
  EXPECT_THROW(m.add(random_tensor({q.n, q.c, q.h + 1, q.w}, 1)), Error);
}
