// Resize, TopK and Mod on the CPU backend, for what ONNX's node conformance
// data does not cover:
//   Resize: TensorFlow's ResizeBilinear / ResizeNearestNeighbor in all three
//   of their coordinate conventions, computed here in float64 the way TF's
//   kernels do (source = scaler(out), floor / ceil clamped to the edge), to
//   pin the ONNX attributes a TF importer maps them to; bicubic and bilinear
//   against torch.nn.functional.interpolate; blocked and nhwc inputs against
//   the plain result; axes and keep_aspect_ratio_policy; clean errors for
//   what is not supported.
//   TopK: a 1x(128*128*80) row with many ties against std::partial_sort;
//   inner axes, integer dtypes, NaN, K that is not a constant.
//   Mod: every integer dtype and floats, both fmod modes, against numpy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "graph/session.h"
#include "ops/schema.h"
#include "tests/graph_builder.h"
#include "tests/numpy_ref.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor i64s(std::vector<int64_t> v) {
  Shape s{int64_t(v.size())};
  return Tensor::from_vector(v, s);
}

Tensor f32s(std::vector<float> v) {
  Shape s{int64_t(v.size())};
  return Tensor::from_vector(v, s);
}

// Resize-13 of x to `sizes` (a constant input), with string attributes.
OpCall resize_to(const Tensor& x, std::vector<int64_t> sizes, const std::string& mode,
                 const std::string& coordinate, const std::string& nearest = "round_prefer_floor") {
  Attributes a;
  a.set("mode", mode);
  a.set("coordinate_transformation_mode", coordinate);
  a.set("nearest_mode", nearest);
  OpCall c = make_call("Resize", a, {x, Tensor(), Tensor(), i64s(std::move(sizes))}, {false, true, true, true});
  c.opset = 13;
  return c;
}

// ---- TensorFlow's resize kernels, in float64 ------------------------------

enum class TfCoords { legacy, half_pixel_centers, align_corners };

// TF's scale: in / out, or (in - 1) / (out - 1) with align_corners.
double tf_scale(int64_t in, int64_t out, TfCoords c) {
  if (c == TfCoords::align_corners && out > 1) return double(in - 1) / double(out - 1);
  return double(in) / double(out);
}

// ResizeBilinear: in = out * scale (legacy, align_corners) or
// (out + 0.5) * scale - 0.5 (half_pixel_centers); lower = max(floor(in), 0),
// upper = min(ceil(in), in_size - 1), lerp = in - floor(in).
struct TfLerp {
  int64_t lower, upper;
  double lerp;
};
TfLerp tf_bilinear_axis(int64_t out_index, int64_t in, int64_t out, TfCoords c) {
  double scale = tf_scale(in, out, c);
  double v = c == TfCoords::half_pixel_centers ? (double(out_index) + 0.5) * scale - 0.5 : double(out_index) * scale;
  double f = std::floor(v);
  return {std::max<int64_t>(int64_t(f), 0), std::min<int64_t>(int64_t(std::ceil(v)), in - 1), v - f};
}

Tensor tf_resize_bilinear(const Tensor& x, int64_t oh, int64_t ow, TfCoords c) {
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y = Tensor::empty(DType::f32, {n, ch, oh, ow});
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  for (int64_t p = 0; p < n * ch; ++p)
    for (int64_t i = 0; i < oh; ++i) {
      TfLerp ly = tf_bilinear_axis(i, h, oh, c);
      for (int64_t j = 0; j < ow; ++j) {
        TfLerp lx = tf_bilinear_axis(j, w, ow, c);
        auto at = [&](int64_t r, int64_t q) { return double(src[(p * h + r) * w + q]); };
        double top = at(ly.lower, lx.lower) + (at(ly.lower, lx.upper) - at(ly.lower, lx.lower)) * lx.lerp;
        double bottom = at(ly.upper, lx.lower) + (at(ly.upper, lx.upper) - at(ly.upper, lx.lower)) * lx.lerp;
        dst[(p * oh + i) * ow + j] = float(top + (bottom - top) * ly.lerp);
      }
    }
  return y;
}

// ResizeNearestNeighbor: in = min(floor(out * scale), in_size - 1), with
// (out + 0.5) * scale for half_pixel_centers and roundf (half away from zero)
// for align_corners.
int64_t tf_nearest_axis(int64_t out_index, int64_t in, int64_t out, TfCoords c) {
  double scale = tf_scale(in, out, c);
  double v = c == TfCoords::half_pixel_centers ? (double(out_index) + 0.5) * scale : double(out_index) * scale;
  double r = c == TfCoords::align_corners ? std::round(v) : std::floor(v);
  return std::min<int64_t>(int64_t(r), in - 1);
}

Tensor tf_resize_nearest(const Tensor& x, int64_t oh, int64_t ow, TfCoords c) {
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y = Tensor::empty(DType::f32, {n, ch, oh, ow});
  for (int64_t p = 0; p < n * ch; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        y.data<float>()[(p * oh + i) * ow + j] =
            x.data<float>()[(p * h + tf_nearest_axis(i, h, oh, c)) * w + tf_nearest_axis(j, w, ow, c)];
  return y;
}

TEST(Resize, TfBilinearAsymmetricUpsampleByTwo) {
  Tensor x = random_tensor({1, 3, 5, 7}, 11);
  Tensor want = tf_resize_bilinear(x, 10, 14, TfCoords::legacy);
  // By sizes, and by scales as TF's converters also emit it.
  Tensor by_sizes = run_op_cpu(resize_to(x, {1, 3, 10, 14}, "linear", "asymmetric"))[0];
  Attributes a;
  a.set("mode", std::string("linear"));
  a.set("coordinate_transformation_mode", std::string("asymmetric"));
  OpCall c = make_call("Resize", a, {x, Tensor(), f32s({1, 1, 2, 2})}, {false, true, true});
  c.opset = 11;
  Tensor by_scales = run_op_cpu(c)[0];
  expect_close(by_sizes, want, 1e-6, "sizes");
  expect_close(by_scales, want, 1e-6, "scales");
}

TEST(Resize, TfBilinearAllConventionsNonIntegerRatios) {
  Tensor x = random_tensor({2, 3, 5, 7}, 12);
  const std::pair<TfCoords, const char*> modes[] = {{TfCoords::legacy, "asymmetric"},
                                                     {TfCoords::half_pixel_centers, "half_pixel"},
                                                     {TfCoords::align_corners, "align_corners"}};
  for (auto [tf, onnx] : modes)
    for (auto [oh, ow] : {std::pair<int64_t, int64_t>{8, 3}, {3, 11}, {1, 1}, {5, 7}, {13, 16}}) {
      Tensor got = run_op_cpu(resize_to(x, {2, 3, oh, ow}, "linear", onnx))[0];
      expect_close(got, tf_resize_bilinear(x, oh, ow, tf), 1e-5,
                   std::string(onnx) + " to " + std::to_string(oh) + "x" + std::to_string(ow));
    }
}

TEST(Resize, TfNearestAllConventions) {
  Tensor x = random_tensor({1, 2, 5, 7}, 13);
  struct Mode {
    TfCoords tf;
    const char* coordinate;
    const char* nearest;
  };
  const Mode modes[] = {{TfCoords::legacy, "asymmetric", "floor"},
                        {TfCoords::half_pixel_centers, "tf_half_pixel_for_nn", "floor"},
                        {TfCoords::align_corners, "align_corners", "round_prefer_ceil"}};
  for (const Mode& m : modes)
    for (auto [oh, ow] : {std::pair<int64_t, int64_t>{8, 3}, {10, 14}, {3, 11}, {2, 2}, {9, 13}}) {
      Tensor got = run_op_cpu(resize_to(x, {1, 2, oh, ow}, "nearest", m.coordinate, m.nearest))[0];
      expect_same(got, tf_resize_nearest(x, oh, ow, m.tf),
                  std::string(m.coordinate) + " to " + std::to_string(oh) + "x" + std::to_string(ow));
    }
}

TEST(Resize, LinearAndCubicMatchTorchInterpolate) {
  if (!have_reference_python()) GTEST_SKIP() << "no reference python";
  Tensor x = random_tensor({1, 2, 6, 7}, 14);
  NumpyChecks ref;
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{9, 4}, {12, 14}, {4, 5}}) {
    std::string size = "size=(" + std::to_string(oh) + "," + std::to_string(ow) + ")";
    std::string torch = "import torch\nt = torch.from_numpy(x0).double()\n";
    ref.add(run_op_cpu(resize_to(x, {1, 2, oh, ow}, "linear", "half_pixel"))[0],
            torch + "r = torch.nn.functional.interpolate(t, " + size +
                ", mode='bilinear', align_corners=False).float().numpy()",
            {x}, "bilinear half_pixel " + size, 1e-5);
    ref.add(run_op_cpu(resize_to(x, {1, 2, oh, ow}, "linear", "align_corners"))[0],
            torch + "r = torch.nn.functional.interpolate(t, " + size +
                ", mode='bilinear', align_corners=True).float().numpy()",
            {x}, "bilinear align_corners " + size, 1e-5);
    // torch's bicubic is Keys' kernel with a = -0.75, ONNX's default.
    ref.add(run_op_cpu(resize_to(x, {1, 2, oh, ow}, "cubic", "half_pixel"))[0],
            torch + "r = torch.nn.functional.interpolate(t, " + size +
                ", mode='bicubic', align_corners=False).float().numpy()",
            {x}, "bicubic half_pixel " + size, 1e-5);
  }
  ref.check();
}

// Blocked and channels-last inputs keep their layout and give the plain
// result exactly: the same blends, over other memory strides.
TEST(Resize, KeepsBlockedAndNhwcLayouts) {
  Tensor x = random_tensor({2, 20, 6, 5}, 15);
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    Tensor plain = run_op_cpu(resize_to(x, {2, 20, 12, 7}, mode, "half_pixel"))[0];
    for (Layout l : {Layout::blocked16, Layout::blocked8, Layout::nhwc}) {
      OpCall c = resize_to(x, {2, 20, 12, 7}, mode, "half_pixel");
      c.input_layout = l;
      expect_same(run_op_cpu(c)[0], plain, std::string(mode) + " from " + std::string(layout_name(l)));
      TensorDesc xd = x.desc();
      xd.layout = l;
      Tensor sizes = i64s({2, 20, 12, 7});
      Attributes a = c.attrs;
      TensorDesc empty{DType::f32, {0}};  // roi and scales, not given
      EXPECT_EQ(planned_output_layout("Resize", a, {xd, empty, empty, sizes.desc()},
                                      {nullptr, nullptr, nullptr, &sizes}),
                l)
          << mode;
    }
  }
}

TEST(Resize, NearestOnIntegersAndIdentityIsAView) {
  std::vector<int64_t> v(12);
  std::iota(v.begin(), v.end(), -5);
  Tensor x = Tensor::from_vector(v, {1, 1, 3, 4});
  Tensor y = run_op_cpu(resize_to(x, {1, 1, 6, 2}, "nearest", "asymmetric", "floor"))[0];
  // Rows 0,0,1,1,2,2 and columns 0,2 of x.
  std::vector<int64_t> want = {-5, -3, -5, -3, -1, 1, -1, 1, 3, 5, 3, 5};
  EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 12), want);
  Tensor same = run_op_cpu(resize_to(x, {1, 1, 3, 4}, "linear", "half_pixel"))[0];
  expect_same(same, x, "identity resize of int64 (a view, no kernel)");
}

TEST(Resize, UpsampleRepeatsElements) {
  Tensor x = random_tensor({1, 2, 3, 2}, 16);
  Attributes a;
  a.set("mode", std::string("nearest"));
  OpCall c = make_call("Upsample", a, {x, f32s({1, 1, 2, 3})}, {false, true});
  c.opset = 9;
  Tensor y = run_op_cpu(c)[0];
  ASSERT_EQ(y.shape(), (Shape{1, 2, 6, 6}));
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t col = i % 6, row = (i / 6) % 6, plane = i / 36;
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[(plane * 3 + row / 2) * 2 + col / 3]) << i;
  }
}

// Resize-10 has no coordinate attributes: asymmetric coordinates, and
// nearest floors (ceils on a downsampled axis, as onnxruntime does). The
// expected values are the examples of Resize-10 in ONNX's operator docs.
TEST(Resize, Opset10Examples) {
  auto run10 = [](const std::string& mode, const Tensor& x, std::vector<float> scales) {
    Attributes a;
    a.set("mode", mode);
    OpCall c = make_call("Resize", a, {x, f32s(std::move(scales))}, {false, true});
    c.opset = 10;
    return run_op_cpu(c)[0];
  };
  Tensor down = run10("nearest", Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4}),
                      {1, 1, 0.6f, 0.6f});
  expect_same(down, Tensor::from_vector(std::vector<float>{1, 3}, {1, 1, 1, 2}), "nearest 0.6");
  Tensor up = run10("linear", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}), {1, 1, 2, 2});
  std::vector<float> want = {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4};
  expect_same(up, Tensor::from_vector(want, {1, 1, 4, 4}), "linear x2");
}

// Resize-18: sizes for some axes only; keep_aspect_ratio_policy scales every
// listed axis by the smallest (not_larger) or largest (not_smaller) ratio,
// rounding half up.
TEST(Resize, AxesAndKeepAspectRatio) {
  Tensor x = random_tensor({1, 2, 4, 6}, 17);
  auto run18 = [&](const std::string& policy, std::vector<int64_t> sizes) {
    Attributes a;
    a.set("mode", std::string("linear"));
    a.set("axes", std::vector<int64_t>{2, 3});
    a.set("keep_aspect_ratio_policy", policy);
    OpCall c = make_call("Resize", a, {x, Tensor(), Tensor(), i64s(std::move(sizes))}, {false, true, true, true});
    c.opset = 18;
    return run_op_cpu(c)[0];
  };
  Tensor stretched = run18("stretch", {5, 9});
  expect_same(stretched, run_op_cpu(resize_to(x, {1, 2, 5, 9}, "linear", "half_pixel"))[0], "axes [2,3]");
  EXPECT_EQ(run18("not_larger", {7, 7}).shape(), (Shape{1, 2, 5, 7}));   // scale 7/6: 4.67 -> 5
  EXPECT_EQ(run18("not_smaller", {7, 7}).shape(), (Shape{1, 2, 7, 11}));  // scale 7/4: 10.5 -> 11
}

TEST(Resize, UnsupportedAndInvalidArgumentsAreErrors) {
  Tensor x = random_tensor({1, 1, 4, 4}, 18);
  auto kind_of = [](const OpCall& c) {
    try {
      run_op_cpu(c);
    } catch (const Error& e) {
      return e.kind();
    }
    ADD_FAILURE() << "no error";
    return ErrorKind::invalid;
  };
  Attributes aa;
  aa.set("mode", std::string("linear"));
  aa.set("antialias", int64_t(1));
  OpCall antialias = make_call("Resize", aa, {x, Tensor(), f32s({1, 1, 0.5f, 0.5f})}, {false, true, true});
  antialias.opset = 18;
  EXPECT_EQ(kind_of(antialias), ErrorKind::unsupported);
  Tensor xi = Tensor::from_vector(std::vector<int32_t>(16, 3), {1, 1, 4, 4});
  EXPECT_EQ(kind_of(resize_to(xi, {1, 1, 8, 8}, "linear", "half_pixel")), ErrorKind::unsupported);
  EXPECT_EQ(kind_of(resize_to(x, {1, 1, 8}, "linear", "half_pixel")), ErrorKind::invalid);
  EXPECT_EQ(kind_of(resize_to(x, {1, 1, 8, 8}, "bicubic", "half_pixel")), ErrorKind::invalid);
  EXPECT_EQ(kind_of(resize_to(x, {1, 1, 8, 8}, "linear", "pixel_center")), ErrorKind::invalid);
  OpCall both = make_call("Resize", {}, {x, Tensor(), f32s({1, 1, 2, 2}), i64s({1, 1, 8, 8})},
                          {false, true, true, true});
  EXPECT_EQ(kind_of(both), ErrorKind::invalid);
  OpCall no_roi = resize_to(x, {1, 1, 3, 3}, "linear", "tf_crop_and_resize");
  EXPECT_EQ(kind_of(no_roi), ErrorKind::invalid);
  OpCall huge = make_call("Resize", {}, {x, Tensor(), f32s({1, 1, 1e30f, 1e30f})}, {false, true, true});
  EXPECT_EQ(kind_of(huge), ErrorKind::invalid);
}

TEST(Resize, ComputedScalesLeaveTheShapeUnknown) {
  ops::InferContext c;
  c.op_type = "Resize";
  c.opset = 13;
  c.inputs = {TensorDesc{DType::f32, {1, 3, 8, 8}}, TensorDesc{}, TensorDesc{DType::f32, {4}}};
  c.present = {true, false, true};
  c.constants = {nullptr, nullptr, nullptr};
  EXPECT_EQ(ops::infer_outputs(c)[0].shape, (Shape{-1, -1, -1, -1}));
}

// A session specializes small float scales fed at run time, so a model whose
// scales is a graph input (as in ONNX's node tests) compiles.
TEST(Resize, SessionTakesScalesAsAnInput) {
  GraphBuilder b;
  b.g.opset = 13;
  ValueId x = b.input("x", {1, 1, 2, 3});
  ValueId scales = b.input("scales", {4});
  Attributes a;
  a.set("mode", std::string("nearest"));
  b.output(b.node("Resize", {x, kNoValue, scales}, a));
  Session s(std::move(b.g));
  Tensor xv = random_tensor({1, 1, 2, 3}, 19);
  Tensor up = s.run(std::vector<Tensor>{xv, f32s({1, 1, 2, 2})})[0];
  EXPECT_EQ(up.shape(), (Shape{1, 1, 4, 6}));
  Tensor down = s.run(std::vector<Tensor>{xv, f32s({1, 1, 1, 0.5f})})[0];
  EXPECT_EQ(down.shape(), (Shape{1, 1, 2, 1}));
}

// ---- TopK -----------------------------------------------------------------

OpCall topk_call(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  Attributes a;
  a.set("axis", axis);
  a.set("largest", int64_t(largest ? 1 : 0));
  a.set("sorted", int64_t(1));
  OpCall c = make_call("TopK", a, {x, i64s({k})}, {false, true});
  c.num_outputs = 2;
  c.opset = 11;
  return c;
}

// Few distinct values, so ties are everywhere and must go to the lower index.
TEST(TopK, LongRowAgainstPartialSort) {
  const int64_t n = 128 * 128 * 80, k = 100;
  std::mt19937 gen(21);
  std::uniform_int_distribution<int> dist(0, 50000);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = float(dist(gen)) * 0.25f;
  Tensor x = Tensor::from_vector(v, {1, n});
  for (bool largest : {true, false}) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      float va = v[size_t(a)], vb = v[size_t(b)];
      if (va != vb) return largest ? va > vb : va < vb;
      return a < b;
    });
    std::vector<Tensor> got = run_op_cpu(topk_call(x, k, -1, largest));
    ASSERT_EQ(got[0].shape(), (Shape{1, k}));
    ASSERT_EQ(got[1].dtype(), DType::i64);
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(got[1].data<int64_t>()[i], order[size_t(i)]) << "largest=" << largest << " rank " << i;
      ASSERT_EQ(got[0].data<float>()[i], v[size_t(order[size_t(i)])]) << i;
    }
  }
}

// A peak map as the detector's: mostly zeros, a few hundred peaks, two NaNs
// (which rank above every number) and some negatives; the row goes by in
// runs that one test rejects, which must not skip a winner.
TEST(TopK, SparseRowWithNanAgainstPartialSort) {
  const int64_t n = 128 * 128 * 80 + 37, k = 100;
  std::mt19937 gen(23);
  std::uniform_int_distribution<int64_t> where(0, n - 1);
  std::uniform_real_distribution<float> value(0.01f, 1.f);
  std::vector<float> v(static_cast<size_t>(n), 0.f);
  for (int i = 0; i < 300; ++i) v[size_t(where(gen))] = value(gen);
  for (int i = 0; i < 50; ++i) v[size_t(where(gen))] = -value(gen);
  v[size_t(n - 1)] = 2.f;  // in the tail after the last whole run
  const float nan = std::numeric_limits<float>::quiet_NaN();
  v[size_t(where(gen))] = nan;
  v[size_t(where(gen))] = nan;
  Tensor x = Tensor::from_vector(v, {1, n});
  for (bool largest : {true, false}) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      const float va = v[size_t(a)], vb = v[size_t(b)];
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na != nb) return largest ? na : nb;  // NaN first when largest, last when smallest
      if (!na && va != vb) return largest ? va > vb : va < vb;
      return a < b;
    });
    std::vector<Tensor> got = run_op_cpu(topk_call(x, k, -1, largest));
    for (int64_t i = 0; i < k; ++i)
      ASSERT_EQ(got[1].data<int64_t>()[i], order[size_t(i)])
          << "largest=" << largest << " rank " << i;
  }
}

// TopK along the middle axis of [4, 50, 6] against a stable sort of each
// column, for the integer dtypes.
template <class T>
void check_inner_axis(bool largest) {
  const int64_t outer = 4, n = 50, inner = 6, k = 7;
  std::mt19937 gen(22);
  std::uniform_int_distribution<int> dist(-20, 20);
  std::vector<T> v(static_cast<size_t>(outer * n * inner));
  for (T& e : v) e = T(dist(gen));
  Tensor x = Tensor::from_vector(v, {outer, n, inner});
  std::vector<Tensor> got = run_op_cpu(topk_call(x, k, 1, largest));
  ASSERT_EQ(got[0].shape(), (Shape{outer, k, inner}));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> idx(static_cast<size_t>(n));
      std::iota(idx.begin(), idx.end(), 0);
      auto at = [&](int64_t j) { return v[size_t((o * n + j) * inner + i)]; };
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        return largest ? at(a) > at(b) : at(a) < at(b);
      });
      for (int64_t t = 0; t < k; ++t) {
        int64_t pos = (o * k + t) * inner + i;
        ASSERT_EQ(got[1].data<int64_t>()[pos], idx[size_t(t)]) << o << "," << i << "," << t;
        ASSERT_EQ(got[0].data<T>()[pos], at(idx[size_t(t)]));
      }
    }
}

TEST(TopK, InnerAxisIntegers) {
  for (bool largest : {true, false}) {
    check_inner_axis<int32_t>(largest);
    check_inner_axis<int64_t>(largest);
  }
}

TEST(TopK, NanRanksAboveEverything) {
  if (!have_reference_python()) GTEST_SKIP() << "no reference python";
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32s({1.f, nan, 3.f, -std::numeric_limits<float>::infinity(), 2.f});
  std::vector<Tensor> largest = run_op_cpu(topk_call(x, 3, 0, true));
  std::vector<Tensor> smallest = run_op_cpu(topk_call(x, 3, 0, false));
  NumpyChecks ref;
  std::string t = "import torch\nt = torch.from_numpy(x0)\n";
  ref.add(largest[1], t + "r = torch.topk(t, 3).indices.numpy()", {x}, "largest");
  ref.add(smallest[1], t + "r = torch.topk(t, 3, largest=False).indices.numpy()", {x}, "smallest");
  ref.check();
}

TEST(TopK, ShapesAndErrors) {
  Tensor x = random_tensor({3, 4}, 23);
  std::vector<Tensor> none = run_op_cpu(topk_call(x, 0, 1, true));
  EXPECT_EQ(none[0].shape(), (Shape{3, 0}));
  EXPECT_EQ(none[1].shape(), (Shape{3, 0}));
  EXPECT_THROW(run_op_cpu(topk_call(x, 5, 1, true)), Error);
  EXPECT_THROW(run_op_cpu(topk_call(x, -1, 1, true)), Error);
  EXPECT_THROW(run_op_cpu(topk_call(x, 1, 2, true)), Error);
  // K computed at run time: the extent along the axis is unknown.
  ops::InferContext c;
  c.op_type = "TopK";
  c.opset = 11;
  c.num_outputs = 2;
  c.inputs = {x.desc(), TensorDesc{DType::i64, {1}}};
  c.present = {true, true};
  c.constants = {nullptr, nullptr};
  std::vector<TensorDesc> out = ops::infer_outputs(c);
  EXPECT_EQ(out[0].shape, (Shape{3, -1}));
  EXPECT_EQ(out[1], (TensorDesc{DType::i64, {3, -1}}));
}

// ---- Mod ------------------------------------------------------------------

template <class T>
Tensor ints(std::vector<int> v, Shape s) {
  std::vector<T> t(v.begin(), v.end());
  return Tensor::from_vector(t, s);
}

OpCall mod_call(const Tensor& a, const Tensor& b, int64_t fmod) {
  Attributes attrs;
  attrs.set("fmod", fmod);
  return make_call("Mod", attrs, {a, b}, {false, false});
}

TEST(Mod, IntegersAndFloatsAgainstNumpy) {
  if (!have_reference_python()) GTEST_SKIP() << "no reference python";
  std::vector<int> av = {-7, -6, -5, -1, 0, 1, 5, 6, 7, 13, -13, 100}, bv = {3, -3, 4, -4};
  std::vector<int> uav = {0, 1, 5, 6, 7, 13, 100, 255, 17, 3, 9, 200}, ubv = {3, 7, 4, 250};
  NumpyChecks ref;
  auto both = [&](const Tensor& a, const Tensor& b, const std::string& what, double rel) {
    ref.add(run_op_cpu(mod_call(a, b, 0))[0], "r = np.mod(x0, x1)", {a, b}, what + " fmod=0", rel);
    ref.add(run_op_cpu(mod_call(a, b, 1))[0], "r = np.fmod(x0, x1)", {a, b}, what + " fmod=1", rel);
  };
  both(ints<int32_t>(av, {3, 4}), ints<int32_t>(bv, {4}), "i32", -1);
  both(ints<int64_t>(av, {3, 1, 4}), ints<int64_t>(bv, {1, 4, 1}), "i64", -1);
  both(ints<int8_t>(av, {12}), ints<int8_t>({-3}, {1}), "i8", -1);
  both(ints<uint8_t>(uav, {3, 4}), ints<uint8_t>(ubv, {4}), "u8", -1);
  Tensor fa = random_tensor({3, 4}, 24, -10.f, 10.f), fb = random_tensor({4}, 25, -3.f, 3.f);
  both(fa, fb, "f32", 1e-6);
  std::vector<double> da(12), db = {2.5, -2.5, 0.75, -1e-3};
  for (size_t i = 0; i < da.size(); ++i) da[i] = fa.data<float>()[i] * 1.1;
  both(Tensor::from_vector(da, {3, 4}), Tensor::from_vector(db, {4}), "f64", 1e-12);
  // Extremes: INT32_MIN % -1 is 0 in both modes (C++ would trap).
  both(Tensor::from_vector(std::vector<int32_t>{INT32_MIN, INT32_MAX, INT32_MIN}, {3}),
       Tensor::from_vector(std::vector<int32_t>{-1, -1, 7}, {3}), "i32 extremes", -1);
  ref.check();
}

TEST(Mod, IntegerModuloByZeroIsAnError) {
  Tensor a = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  Tensor b = Tensor::from_vector(std::vector<int64_t>{1, 0, 1}, {3});
  EXPECT_THROW(run_op_cpu(mod_call(a, b, 0)), Error);
  EXPECT_THROW(run_op_cpu(mod_call(a, b, 1)), Error);
  Tensor bad = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_THROW(run_op_cpu(mod_call(a, bad, 0)), Error);
  Attributes attrs;
  attrs.set("fmod", int64_t(2));
  EXPECT_THROW(run_op_cpu(make_call("Mod", attrs, {a, b}, {false, false})), Error);
}

}  // namespace
