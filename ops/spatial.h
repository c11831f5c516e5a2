#pragma once
// Window geometry shared by convolution and pooling: kernel, strides,
// dilations and pads over the spatial dims of an [N, C, D1..Dk] tensor,
// including ONNX auto_pad and ceil_mode. Extents of -1 (unknown until a
// session fixes the input size) propagate as -1.
#include <string>

#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

struct Window {
  Shape kernel;      // [k] window extents
  Shape strides;     // [k] >= 1
  Shape dilations;   // [k] >= 1 (ONNX convention: 1 = dense)
  Shape pads_begin;  // [k] >= 0, resolved from auto_pad when set
  Shape pads_end;    // [k] >= 0
  Shape out;         // [k] output extents, -1 when the input extent is unknown
  bool ceil_mode = false;

  size_t rank() const { return kernel.size(); }
  // Pad at the end that makes the last (partial) window of ceil_mode fit:
  // (out-1)*stride + dilated kernel - in - pad_begin, never below pads_end.
  int64_t effective_pad_end(size_t i, int64_t in) const;
};

// Reads strides/dilations/pads/auto_pad/ceil_mode from `attrs` for `kernel`
// over input spatial extents `in` and computes the output extents. Throws
// Error for inconsistent attribute lengths, non-positive values, or a window
// larger than the padded input.
Window resolve_window(const Attributes& attrs, const Shape& kernel, const Shape& in,
                      bool allow_ceil_mode);

}  // namespace tandem::ops
