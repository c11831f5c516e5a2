// Resize and Upsample. Resize-10 and Upsample take scales only and map
// coordinates asymmetrically; Resize-11+ adds roi, sizes and the coordinate
// and nearest modes; Resize-18 adds axes, keep_aspect_ratio_policy and
// antialias; Resize-19 adds half_pixel_symmetric.
#include "ops/resize.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

constexpr double kMaxExtent = double(int64_t(1) << 40);

ResizeMode parse_mode(const std::string& m, bool upsample) {
  if (m == "nearest") return ResizeMode::nearest;
  // Upsample-1 (experimental) called it "bilinear".
  if (m == "linear" || (upsample && m == "bilinear")) return ResizeMode::linear;
  if (m == "cubic") return ResizeMode::cubic;
  throw Error("unknown mode '" + m + "'");
}

CoordinateMode parse_coordinate(const std::string& m) {
  static const std::pair<const char*, CoordinateMode> kModes[] = {
      {"half_pixel", CoordinateMode::half_pixel},
      {"half_pixel_symmetric", CoordinateMode::half_pixel_symmetric},
      {"pytorch_half_pixel", CoordinateMode::pytorch_half_pixel},
      {"align_corners", CoordinateMode::align_corners},
      {"asymmetric", CoordinateMode::asymmetric},
      {"tf_half_pixel_for_nn", CoordinateMode::tf_half_pixel_for_nn},
      {"tf_crop_and_resize", CoordinateMode::tf_crop_and_resize},
  };
  for (const auto& [name, mode] : kModes)
    if (m == name) return mode;
  throw Error("unknown coordinate_transformation_mode '" + m + "'");
}

NearestMode parse_nearest(const std::string& m) {
  if (m == "round_prefer_floor") return NearestMode::round_prefer_floor;
  if (m == "round_prefer_ceil") return NearestMode::round_prefer_ceil;
  if (m == "floor") return NearestMode::floor;
  if (m == "ceil") return NearestMode::ceil;
  throw Error("unknown nearest_mode '" + m + "'");
}

// An optional input that is present and not an empty tensor (writers pass an
// empty scales next to sizes).
bool given(const InferContext& c, size_t i) {
  if (!c.has_input(i)) return false;
  const Shape& s = c.shape(i);
  return !(shape_is_static(s) && shape_numel(s) == 0);
}

const Tensor* value_of(const InferContext& c, size_t i) {
  return i < c.constants.size() ? c.constants[i] : nullptr;
}

std::vector<double> float_list(const Tensor& t, const char* what, size_t count) {
  check(is_floating(t.dtype()) && t.rank() == 1, std::string(what) + " must be a 1-D float tensor, got " +
                                                     t.desc().str());
  check(size_t(t.numel()) == count, std::string(what) + " has " + std::to_string(t.numel()) +
                                        " entries, expected " + std::to_string(count));
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_at(i));
  return v;
}

int64_t checked_extent(double v) {
  check(std::isfinite(v) && v >= 0 && v < kMaxExtent, "output extent " + std::to_string(v) + " is invalid");
  return int64_t(v);
}

// Sizes given: scale = size / input extent; with a keep_aspect_ratio_policy
// every resized axis takes the smallest (not_larger) or largest
// (not_smaller) of those and the extent is rounded half up.
void apply_sizes(ResizeSpec& s, const Shape& in, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& sizes, const std::string& policy) {
  check(sizes.size() == axes.size(), "sizes has " + std::to_string(sizes.size()) + " entries for " +
                                         std::to_string(axes.size()) + " axes");
  std::vector<double> ratios;
  bool unknown = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t extent = in[size_t(axes[k])];
    unknown |= extent < 0;
    check(sizes[k] >= 0 && double(sizes[k]) < kMaxExtent, "size " + std::to_string(sizes[k]) + " is invalid");
    check(extent != 0 || sizes[k] == 0, "cannot resize an empty axis to " + std::to_string(sizes[k]));
    ratios.push_back(extent > 0 ? double(sizes[k]) / double(extent) : 1.0);
  }
  bool stretch = policy == "stretch";
  double common = ratios.empty() ? 1.0
                  : policy == "not_larger" ? *std::min_element(ratios.begin(), ratios.end())
                                           : *std::max_element(ratios.begin(), ratios.end());
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t d = size_t(axes[k]);
    s.scales[d] = stretch ? ratios[k] : common;
    if (!stretch && unknown) {
      s.out[d] = -1;
      continue;
    }
    s.out[d] = stretch ? sizes[k] : checked_extent(common * double(in[d]) + 0.5);
    s.lengths[d] = stretch ? double(sizes[k]) : common * double(in[d]);
  }
}

// Scales given: extent = floor(input extent * roi length * scale).
void apply_scales(ResizeSpec& s, const Shape& in, const std::vector<int64_t>& axes,
                  const std::vector<double>& scales) {
  check(scales.size() == axes.size(), "scales has " + std::to_string(scales.size()) + " entries for " +
                                          std::to_string(axes.size()) + " axes");
  bool crop = s.coordinate == CoordinateMode::tf_crop_and_resize;
  for (size_t k = 0; k < axes.size(); ++k) {
    size_t d = size_t(axes[k]);
    check(std::isfinite(scales[k]) && scales[k] > 0, "scale " + std::to_string(scales[k]) + " is not positive");
    double roi = crop ? s.roi_end[d] - s.roi_start[d] : 1.0;
    s.scales[d] = scales[k];
    s.lengths[d] = double(in[d]) * roi * scales[k];
    s.out[d] = in[d] < 0 ? -1 : checked_extent(std::floor(s.lengths[d]));
  }
}

std::vector<double> scale_values(const InferContext& c, bool from_attribute, size_t index, size_t count) {
  if (from_attribute) {
    std::vector<float> f = c.attributes().get_floats("scales");
    check(f.size() == count, "scales has " + std::to_string(f.size()) + " entries for rank " +
                                 std::to_string(count));
    return std::vector<double>(f.begin(), f.end());
  }
  return float_list(*value_of(c, index), "scales", count);
}

}  // namespace

ResizeSpec resize_spec(const InferContext& c) {
  const Attributes& a = c.attributes();
  const Shape& in = c.shape(0);
  int64_t rank = int64_t(in.size());
  bool upsample = c.op_type == "Upsample";
  bool v10 = upsample || c.opset < 11;
  ResizeSpec s;
  s.mode = parse_mode(a.get_string("mode", "nearest"), upsample);
  if (v10) {
    s.coordinate = CoordinateMode::asymmetric;
    s.nearest = NearestMode::simple;
  } else {
    s.coordinate = parse_coordinate(a.get_string("coordinate_transformation_mode", "half_pixel"));
    s.nearest = parse_nearest(a.get_string("nearest_mode", "round_prefer_floor"));
    s.cubic_a = a.get_float("cubic_coeff_a", -0.75f);
    s.exclude_outside = a.get_int("exclude_outside", 0) != 0;
    s.extrapolation = a.get_float("extrapolation_value", 0.f);
  }
  check(s.coordinate != CoordinateMode::half_pixel_symmetric || c.opset >= 19,
        "half_pixel_symmetric needs opset 19");
  bool v18 = !v10 && c.opset >= 18;
  check_supported(!v18 || a.get_int("antialias", 0) == 0 || s.mode == ResizeMode::nearest,
                  "antialias is not supported");
  std::string policy = v18 ? a.get_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  check(policy == "stretch" || policy == "not_larger" || policy == "not_smaller",
        "unknown keep_aspect_ratio_policy '" + policy + "'");
  std::vector<int64_t> axes;
  if (v18 && a.has("axes")) axes = normalize_axes(a.get_ints("axes"), rank);
  else
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);

  bool scales_attr = upsample && c.opset < 9;
  size_t scales_index = v10 ? 1 : 2, sizes_index = 3, roi_index = 1;
  bool has_scales = scales_attr ? a.has("scales") : given(c, scales_index);
  bool has_sizes = !v10 && given(c, sizes_index);
  check(has_scales || has_sizes, "needs scales or sizes");
  check(!(has_scales && has_sizes), "takes scales or sizes, not both");
  bool crop = s.coordinate == CoordinateMode::tf_crop_and_resize;
  check(!crop || given(c, roi_index), "tf_crop_and_resize needs roi");

  const Tensor* values = has_sizes ? value_of(c, sizes_index) : value_of(c, scales_index);
  bool known = (scales_attr || values) && (!crop || value_of(c, roi_index));
  if (!known) {
    s.known = false;
    s.out.assign(size_t(rank), -1);
    return s;
  }
  s.scales.assign(size_t(rank), 1.0);
  s.roi_start.assign(size_t(rank), 0.0);
  s.roi_end.assign(size_t(rank), 1.0);
  s.lengths.assign(in.begin(), in.end());
  s.out = in;
  if (crop) {
    std::vector<double> roi = float_list(*value_of(c, roi_index), "roi", 2 * axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      s.roi_start[size_t(axes[k])] = roi[k];
      s.roi_end[size_t(axes[k])] = roi[axes.size() + k];
    }
  }
  if (has_sizes) {
    const Tensor& t = *values;
    check(t.dtype() == DType::i64 && t.rank() == 1, "sizes must be int64 1-D, got " + t.desc().str());
    apply_sizes(s, in, axes, t.to_int_vector(), policy);
  } else {
    apply_scales(s, in, axes, scale_values(c, scales_attr, scales_index, axes.size()));
  }
  return s;
}

double resize_source_coordinate(const ResizeSpec& s, size_t d, int64_t in, int64_t out, int64_t x,
                                bool* outside) {
  double scale = s.scales[d], length = s.lengths[d], xr = double(x), n = double(in);
  *outside = false;
  switch (s.coordinate) {
    case CoordinateMode::half_pixel: return (xr + 0.5) / scale - 0.5;
    case CoordinateMode::half_pixel_symmetric: {
      // Centers the output on the input where flooring cut the extent.
      double adjustment = double(out) / length;
      return n / 2 * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
    }
    case CoordinateMode::pytorch_half_pixel: return length == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
    case CoordinateMode::align_corners: return length == 1 ? 0.0 : xr * (n - 1) / (length - 1);
    case CoordinateMode::asymmetric: return xr / scale;
    case CoordinateMode::tf_half_pixel_for_nn: return (xr + 0.5) / scale;
    case CoordinateMode::tf_crop_and_resize: {
      double start = s.roi_start[d], end = s.roi_end[d];
      double v = length == 1 ? (end - start) * (n - 1) / 2 : xr * (end - start) * (n - 1) / (length - 1);
      v += start * (n - 1);
      *outside = v < 0 || v > n - 1;
      return v;
    }
  }
  return 0.0;
}

namespace {

std::vector<TensorDesc> infer_resize(const InferContext& c) {
  TensorDesc d{c.inputs[0].dtype, resize_spec(c).out};
  check_size(d);
  return {d};
}

}  // namespace

void register_resize_schemas() {
  register_schema({"Resize", 1, 4, infer_resize});
  register_schema({"Upsample", 1, 2, infer_resize});
  // Resize-10's scales is input 1; from Resize-11 on, roi is 1, scales 2.
  register_value_inputs("Resize", {1, 2});
  register_value_inputs("Upsample", {1});
}

}  // namespace tandem::ops
