#pragma once
// Resize (opsets 10-19) and the older Upsample: the argument decoding that
// shape inference and every backend's kernels share. Coordinates follow the
// ONNX spec and its reference implementation: output index x of axis d reads
// input coordinate x_original = transform(x) and interpolates around it.
#include <string>
#include <vector>

#include "ops/schema.h"

namespace tandem::ops {

enum class ResizeMode { nearest, linear, cubic };

enum class CoordinateMode {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize,
};

// `simple` is Resize-10 / Upsample: floor, or ceil on a downsampled axis.
enum class NearestMode { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };

struct ResizeSpec {
  ResizeMode mode = ResizeMode::nearest;
  CoordinateMode coordinate = CoordinateMode::half_pixel;
  NearestMode nearest = NearestMode::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;  // tf_crop_and_resize samples outside the input
  // Per input dim (all empty when `known` is false): the scale (given, or
  // output size / input size), the resized length the coordinate transforms
  // divide by (input length * scale, not floored: ONNX's reference uses it
  // so), and the roi in normalized coordinates (tf_crop_and_resize only).
  std::vector<double> scales, lengths, roi_start, roi_end;
  // Output shape: -1 where an input extent is unknown, all -1 when scales /
  // sizes (or the roi of tf_crop_and_resize) are not constants.
  Shape out;
  bool known = true;
};

// Throws Error for invalid arguments and Error::unsupported for valid ones
// tandem does not implement (antialias).
ResizeSpec resize_spec(const InferContext& c);

// x_original of output index `x` along dim `d` (input length `in`, output
// length `out`). `outside` is set for tf_crop_and_resize coordinates outside
// [0, in - 1], which take the extrapolation value.
double resize_source_coordinate(const ResizeSpec& s, size_t d, int64_t in, int64_t out, int64_t x,
                                bool* outside);

}  // namespace tandem::ops
