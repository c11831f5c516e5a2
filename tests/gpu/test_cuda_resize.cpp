// CUDA Resize and Upsample vs the CPU backend (itself checked against ONNX's
// node tests, TensorFlow's resize kernels and PyTorch), on fresh random
// inputs: linear and cubic within 1e-5 of the reference norm in fp32
// (1e-2 with the GPU graph lowered to fp16 / bf16 and the CPU in f32 on the
// same rounded inputs); nearest bit for bit at every precision and dtype.
// Each case runs on a plain input and, where only H and W change, on an
// nhwc one: a 1x1 MaxPool first (an exact copy) makes the input arrive in
// the layout CUDA convolutions produce.
#include <string>
#include <vector>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

struct ResizeCase {
  Shape in;
  std::vector<float> scales;   // empty: sizes
  std::vector<int64_t> sizes;  // empty: scales
  std::string mode = "linear", coordinate = "half_pixel", nearest = "round_prefer_floor";
  float cubic_a = -0.75f;
  int64_t exclude_outside = 0;
  std::vector<float> roi;  // tf_crop_and_resize
  float extrapolation = 0.f;

  std::string str() const {
    std::string s = mode + " " + coordinate + " " + nearest + " " + shape_str(in) + " ->";
    if (!scales.empty())
      for (float f : scales) s += " " + std::to_string(f);
    else
      s += " " + shape_str(Shape(sizes.begin(), sizes.end()));
    if (exclude_outside) s += " exclude_outside";
    if (mode == "cubic") s += " a=" + std::to_string(cubic_a);
    return s;
  }
  // N and C kept: the nhwc path applies.
  bool spatial_only() const {
    if (in.size() != 4) return false;
    if (!scales.empty()) return scales[0] == 1.f && scales[1] == 1.f;
    return sizes[0] == in[0] && sizes[1] == in[1];
  }
};

Tensor f32s(const std::vector<float>& v) { return Tensor::from_vector(v, {int64_t(v.size())}); }
Tensor i64s(const std::vector<int64_t>& v) { return Tensor::from_vector(v, {int64_t(v.size())}); }

// x [-> MaxPool 1x1] -> Resize-19 (constant roi / scales / sizes).
Graph resize_graph(const ResizeCase& c, DType t, bool nhwc) {
  GraphBuilder b;
  b.g.opset = 19;
  ValueId x = b.input("x", c.in, t);
  if (nhwc) {
    Attributes pool;
    pool.set("kernel_shape", Shape{1, 1});
    x = b.node("MaxPool", {x}, pool);
  }
  Attributes a;
  a.set("mode", c.mode);
  a.set("coordinate_transformation_mode", c.coordinate);
  a.set("nearest_mode", c.nearest);
  a.set("cubic_coeff_a", c.cubic_a);
  a.set("exclude_outside", c.exclude_outside);
  a.set("extrapolation_value", c.extrapolation);
  ValueId roi = c.roi.empty() ? kNoValue : b.constant("roi", f32s(c.roi));
  ValueId scales = c.scales.empty() ? kNoValue : b.constant("scales", f32s(c.scales));
  ValueId sizes = c.sizes.empty() ? kNoValue : b.constant("sizes", i64s(c.sizes));
  std::vector<ValueId> in = {x, roi, scales, sizes};
  while (in.back() == kNoValue) in.pop_back();
  b.output(b.node("Resize", in, a));
  return b.g;
}

// Linear and cubic cases: the detector's upsampling, TF's three bilinear
// conventions, downsampling, one axis, edge lengths of 1, and 3-D / 5-D
// tensors with three resized dims or two apart (the N-D kernel).
std::vector<ResizeCase> blend_cases() {
  std::vector<ResizeCase> v;
  for (const char* coord :
       {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric"})
    for (const char* mode : {"linear", "cubic"}) {
      ResizeCase c;
      c.mode = mode, c.coordinate = coord;
      c.in = {2, 16, 16, 16}, c.sizes = {2, 16, 32, 32};
      v.push_back(c);
      c.in = {1, 3, 5, 7}, c.sizes = {}, c.scales = {1, 1, 2.5f, 1.5f};
      v.push_back(c);
      c.in = {2, 4, 9, 13}, c.scales = {}, c.sizes = {2, 4, 4, 5};
      v.push_back(c);
    }
  ResizeCase c;
  c.in = {2, 256, 16, 16}, c.sizes = {2, 256, 32, 32};  // CenterNet's c5 upsampling
  v.push_back(c);
  c.coordinate = "align_corners";
  v.push_back(c);
  c.coordinate = "half_pixel";
  c.in = {2, 3, 4, 10}, c.sizes = {2, 3, 4, 17};  // W alone
  v.push_back(c);
  c.in = {2, 8, 5, 6}, c.sizes = {2, 8, 11, 6};  // H alone
  v.push_back(c);
  c.coordinate = "pytorch_half_pixel";
  c.in = {1, 2, 1, 7}, c.sizes = {1, 2, 1, 3};  // a length-1 axis
  v.push_back(c);
  c.coordinate = "align_corners";
  c.in = {1, 2, 6, 7}, c.sizes = {1, 2, 1, 1};
  v.push_back(c);
  c.coordinate = "half_pixel";
  c.in = {3, 5, 7}, c.sizes = {5, 9, 4};  // three resized dims
  v.push_back(c);
  c.in = {4, 3, 6}, c.sizes = {7, 3, 2};  // two dims apart
  v.push_back(c);
  c.in = {1, 2, 3, 4, 5}, c.sizes = {}, c.scales = {1, 1, 2, 1.5f, 0.6f};
  v.push_back(c);
  c.mode = "cubic";
  v.push_back(c);
  c.in = {1, 2, 8, 8}, c.scales = {}, c.sizes = {1, 2, 15, 13};
  c.cubic_a = -0.5f, c.exclude_outside = 1;
  v.push_back(c);
  c.coordinate = "asymmetric";
  c.cubic_a = -0.75f, c.exclude_outside = 0;
  c.sizes = {1, 2, 5, 3};
  v.push_back(c);
  return v;
}

// tf_crop_and_resize: a roi partly outside the input, so some outputs take
// the extrapolation value.
std::vector<ResizeCase> crop_cases(const std::string& mode) {
  std::vector<ResizeCase> v;
  ResizeCase c;
  c.mode = mode, c.coordinate = "tf_crop_and_resize", c.nearest = "round_prefer_ceil";
  c.in = {2, 3, 8, 9}, c.sizes = {2, 3, 6, 7};
  c.roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f};
  c.extrapolation = 7.5f;
  v.push_back(c);
  c.in = {1, 2, 6, 5}, c.sizes = {1, 2, 10, 4};
  c.roi = {0, 0, 0.4f, 0.2f, 1, 1, 0.6f, 0.9f};  // inside: no extrapolation
  v.push_back(c);
  return v;
}

void expect_blend_matches(Precision p) {
  std::vector<ResizeCase> cases = blend_cases();
  for (const ResizeCase& c : crop_cases("linear")) cases.push_back(c);
  uint32_t seed = 1;
  for (const ResizeCase& c : cases)
    for (bool nhwc : {false, true}) {
      if (nhwc && !c.spatial_only()) continue;
      auto [cpu, gpu] =
          run_both(resize_graph(c, DType::f32, nhwc), {random_for(p, c.in, seed++)}, p);
      EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
          << c.str() << (nhwc ? " nhwc " : " plain ") << precision_name(p);
    }
}

TEST(CudaResize, LinearAndCubicMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_blend_matches(Precision::fp32);
}

TEST(CudaResize, LinearAndCubicInHalfPrecision) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) expect_blend_matches(p);
}

// Every nearest_mode with every coordinate mode, up and down.
std::vector<ResizeCase> nearest_cases() {
  std::vector<ResizeCase> v;
  for (const char* coord :
       {"half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "pytorch_half_pixel"})
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      ResizeCase c;
      c.mode = "nearest", c.coordinate = coord, c.nearest = nearest;
      c.in = {2, 5, 7, 6}, c.scales = {1, 1, 2.6f, 1.7f};
      v.push_back(c);
      c.scales = {}, c.sizes = {2, 5, 3, 4};
      v.push_back(c);
    }
  ResizeCase c;
  c.mode = "nearest", c.coordinate = "asymmetric", c.nearest = "floor";
  c.in = {3, 5, 7}, c.sizes = {6, 2, 13};  // the N-D kernel
  v.push_back(c);
  for (const ResizeCase& crop : crop_cases("nearest")) v.push_back(crop);
  return v;
}

Tensor random_of(DType t, const Shape& s, uint32_t seed) {
  Tensor f = random_f32(s, seed, -100.f, 100.f);
  if (t == DType::f32) return f;
  Tensor r = Tensor::empty(t, s);
  for (int64_t i = 0; i < f.numel(); ++i) {
    float v = f.data<float>()[i];
    if (t == DType::i64)
      r.data<int64_t>()[i] = int64_t(v * 1e6f);
    else if (t == DType::i32)
      r.data<int32_t>()[i] = int32_t(v * 1e3f);
    else
      static_cast<uint8_t*>(r.raw())[i] = uint8_t(int(v + 100.f));
  }
  return r;
}

TEST(CudaResize, NearestIsExactForEveryModeAndDtype) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 100;
  for (const ResizeCase& c : nearest_cases()) {
    for (DType t : {DType::f32, DType::i64, DType::i32, DType::u8}) {
      auto [cpu, gpu] = run_both(resize_graph(c, t, false), {random_of(t, c.in, seed++)});
      expect_identical(gpu[0], cpu[0], c.str() + " plain " + std::string(dtype_name(t)));
    }
    if (!c.spatial_only()) continue;
    for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
      auto [cpu, gpu] =
          run_both(resize_graph(c, DType::f32, true), {random_for(p, c.in, seed++)}, p);
      expect_identical(gpu[0], cpu[0], c.str() + " nhwc " + precision_name(p));
    }
  }
}

// A plan records its kernels into a CUDA graph at its second run and
// replays it after, on new inputs.
TEST(CudaResize, RecordedPlansReplayOnNewInputs) {
  TANDEM_REQUIRE_GPU();
  ResizeCase c;
  c.in = {2, 64, 16, 16}, c.sizes = {2, 64, 32, 32};
  for (bool nhwc : {false, true}) {
    Graph g = resize_graph(c, DType::f32, nhwc);
    Session cpu(g), gpu(g, SessionOptions::on(Device::cuda(0)));
    for (int run = 0; run < 4; ++run) {
      Tensor x = random_f32(c.in, 200 + uint32_t(run));
      EXPECT_LE(relative_error(gpu.run({x})[0], cpu.run({x})[0]), 1e-5)
          << (nhwc ? "nhwc" : "plain") << " run " << run;
    }
  }
}

// Upsample (opset 9: scales as an input; asymmetric coordinates, floor).
TEST(CudaResize, UpsampleNearestAndLinear) {
  TANDEM_REQUIRE_GPU();
  for (const char* mode : {"nearest", "linear"}) {
    GraphBuilder b;
    b.g.opset = 9;
    ValueId x = b.input("x", {2, 3, 4, 5});
    Attributes a;
    a.set("mode", std::string(mode));
    b.output(b.node("Upsample", {x, b.constant("scales", f32s({1, 1, 2, 3}))}, a));
    auto [cpu, gpu] = run_both(b.g, {random_f32({2, 3, 4, 5}, 7)});
    EXPECT_LE(relative_error(gpu[0], cpu[0]), 1e-5) << mode;
  }
}

// Resizing nothing is a view; a Relu after it proves the next kernel reads it.
TEST(CudaResize, IdentityResizeIsAView) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 4, 5});
  Attributes a;
  a.set("mode", std::string("linear"));
  ValueId y = b.node("Resize", {x, kNoValue, b.constant("scales", f32s({1, 1, 1, 1}))}, a);
  b.output(b.node("Relu", {y}));
  auto [cpu, gpu] = run_both(b.g, {random_f32({2, 3, 4, 5}, 8)});
  expect_identical(gpu[0], cpu[0], "identity resize");
}

}  // namespace
}  // namespace tandem::testing
