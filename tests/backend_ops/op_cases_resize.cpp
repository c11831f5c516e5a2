// Resize (opset 19) and Upsample: linear and cubic blends in every
// coordinate mode, up, down, along one axis, edge lengths of 1, 3-D and 5-D
// tensors (the N-D kernel); tf_crop_and_resize with a roi partly outside;
// every nearest_mode with every coordinate mode, in float and integer
// dtypes, exactly. The reference is the CPU backend's result (its own tests
// check it against ONNX's data, TensorFlow's kernels and PyTorch).
#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"

namespace tandem::backend_ops {

namespace {

struct Resize {
  Shape in;
  std::vector<float> scales;   // empty: sizes
  std::vector<int64_t> sizes;  // empty: scales
  std::string mode = "linear", coordinate = "half_pixel", nearest = "round_prefer_floor";
  float cubic_a = -0.75f;
  int64_t exclude_outside = 0;
  std::vector<float> roi;  // tf_crop_and_resize
  float extrapolation = 0.f;

  std::string label() const {
    std::string s = mode + "-" + coordinate + (mode == "nearest" ? "-" + nearest : "") + "-" +
                    shape_str(in) + "-to-";
    if (!scales.empty())
      for (float f : scales) s += std::to_string(f).substr(0, 4) + ",";
    else
      s += shape_str(Shape(sizes.begin(), sizes.end()));
    if (exclude_outside) s += "-exclude-outside";
    if (mode == "cubic") s += "-a" + std::to_string(cubic_a).substr(0, 5);
    return s;
  }
};

Tensor floats(const std::vector<float>& v) {
  return Tensor::from_vector<float>(v, {int64_t(v.size())});
}

OpCase resize_case(const Resize& r, Tensor x) {
  OpCase c("Resize", r.label());
  c.opset = 19;
  c.in(std::move(x));
  r.roi.empty() ? c.absent() : c.constant_in(floats(r.roi));
  r.scales.empty() ? c.absent() : c.constant_in(floats(r.scales));
  if (!r.sizes.empty())
    c.constant_in(Tensor::from_vector<int64_t>(r.sizes, {int64_t(r.sizes.size())}));
  return c.attr("mode", r.mode)
      .attr("coordinate_transformation_mode", r.coordinate)
      .attr("nearest_mode", r.nearest)
      .attr("cubic_coeff_a", r.cubic_a)
      .attr("exclude_outside", r.exclude_outside)
      .attr("extrapolation_value", r.extrapolation)
      .channels_last();
}

std::vector<Resize> blend_resizes() {
  std::vector<Resize> v;
  for (const char* coord :
       {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric"})
    for (const char* mode : {"linear", "cubic"}) {
      Resize r;
      r.mode = mode, r.coordinate = coord;
      r.in = {2, 16, 16, 16}, r.sizes = {2, 16, 32, 32};
      v.push_back(r);
      r.in = {1, 3, 5, 7}, r.sizes = {}, r.scales = {1, 1, 2.5f, 1.5f};
      v.push_back(r);
      r.in = {2, 4, 9, 13}, r.scales = {}, r.sizes = {2, 4, 4, 5};
      v.push_back(r);
    }
  Resize r;
  r.in = {2, 256, 16, 16}, r.sizes = {2, 256, 32, 32};  // CenterNet's c5 upsampling
  v.push_back(r);
  r.coordinate = "align_corners";
  v.push_back(r);
  r.coordinate = "half_pixel";
  r.in = {2, 3, 4, 10}, r.sizes = {2, 3, 4, 17};  // W alone
  v.push_back(r);
  r.in = {2, 8, 5, 6}, r.sizes = {2, 8, 11, 6};  // H alone
  v.push_back(r);
  r.coordinate = "pytorch_half_pixel";
  r.in = {1, 2, 1, 7}, r.sizes = {1, 2, 1, 3};  // a length-1 axis
  v.push_back(r);
  r.coordinate = "align_corners";
  r.in = {1, 2, 6, 7}, r.sizes = {1, 2, 1, 1};
  v.push_back(r);
  r.coordinate = "half_pixel";
  r.in = {3, 5, 7}, r.sizes = {5, 9, 4};  // three resized dims
  v.push_back(r);
  r.in = {4, 3, 6}, r.sizes = {7, 3, 2};  // two dims apart
  v.push_back(r);
  r.in = {1, 2, 3, 4, 5}, r.sizes = {}, r.scales = {1, 1, 2, 1.5f, 0.6f};
  v.push_back(r);
  r.mode = "cubic";
  v.push_back(r);
  r.in = {1, 2, 8, 8}, r.scales = {}, r.sizes = {1, 2, 15, 13};
  r.cubic_a = -0.5f, r.exclude_outside = 1;
  v.push_back(r);
  r.coordinate = "asymmetric";
  r.cubic_a = -0.75f, r.exclude_outside = 0;
  r.sizes = {1, 2, 5, 3};
  v.push_back(r);
  return v;
}

// A roi partly outside the input (some outputs take the extrapolation
// value), and one inside.
std::vector<Resize> crop_resizes(const std::string& mode) {
  Resize r;
  r.mode = mode, r.coordinate = "tf_crop_and_resize", r.nearest = "round_prefer_ceil";
  r.in = {2, 3, 8, 9}, r.sizes = {2, 3, 6, 7};
  r.roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f};
  r.extrapolation = 7.5f;
  Resize inside = r;
  inside.in = {1, 2, 6, 5}, inside.sizes = {1, 2, 10, 4};
  inside.roi = {0, 0, 0.4f, 0.2f, 1, 1, 0.6f, 0.9f};
  return {r, inside};
}

std::vector<Resize> nearest_resizes() {
  std::vector<Resize> v;
  for (const char* coord :
       {"half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "pytorch_half_pixel"})
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      Resize r;
      r.mode = "nearest", r.coordinate = coord, r.nearest = nearest;
      r.in = {2, 5, 7, 6}, r.scales = {1, 1, 2.6f, 1.7f};
      v.push_back(r);
      r.scales = {}, r.sizes = {2, 5, 3, 4};
      v.push_back(r);
    }
  Resize r;
  r.mode = "nearest", r.coordinate = "asymmetric", r.nearest = "floor";
  r.in = {3, 5, 7}, r.sizes = {6, 2, 13};  // the N-D kernel
  v.push_back(r);
  for (const Resize& crop : crop_resizes("nearest")) v.push_back(crop);
  return v;
}

// Integers from uniform values in [-100, 100): i64 scaled by 1e6, i32 by
// 1e3, u8 shifted to [0, 200).
Tensor integers(DType t, const Shape& s, uint64_t seed) {
  Tensor f = uniform(s, seed, -100, 100), r = Tensor::empty(t, s);
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

}  // namespace

void add_resize_cases(std::vector<OpCase>& cases) {
  Seeds seed{3900};
  std::vector<Resize> blends = blend_resizes();
  for (const Resize& r : crop_resizes("linear")) blends.push_back(r);
  for (const Resize& r : blends) cases.push_back(resize_case(r, uniform(r.in, seed())));
  for (const Resize& r : nearest_resizes()) {
    cases.push_back(resize_case(r, uniform(r.in, seed(), -100, 100)).exactly());
    for (DType t : {DType::i64, DType::i32, DType::u8}) {
      OpCase c = resize_case(r, integers(t, r.in, seed()));
      c.label += "-" + std::string(dtype_name(t));
      cases.push_back(c.exactly());
    }
  }
  // Resizing nothing: a view.
  Resize same;
  same.in = {2, 3, 4, 5}, same.scales = {1, 1, 1, 1};
  cases.push_back(resize_case(same, uniform(same.in, seed())).exactly());
  // Upsample (opset 9: scales as an input; asymmetric coordinates, floor).
  for (const char* mode : {"nearest", "linear"}) {
    OpCase up("Upsample", std::string(mode) + "-x2x3");
    up.opset = 9;
    cases.push_back(up.in(uniform({2, 3, 4, 5}, seed()))
                        .constant_in(floats({1, 1, 2, 3}))
                        .attr("mode", std::string(mode)));
  }
}

}  // namespace tandem::backend_ops
