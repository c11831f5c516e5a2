#pragma once
// Window geometry shared by convolution and pooling: kernel, strides,
// dilations and pads over the spatial dims of an [N, C, D1..Dk] tensor,
// including ONNX auto_pad and ceil_mode. Extents of -1 (unknown until a
// session fixes the input size) propagate as -1.
#include <string>

#include "core/attributes.h"
#include "core/error.h"
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

// Output extent along one axis: `kernel` taps `dilation` apart sliding by
// `stride` over `in` values padded by pad_begin and pad_end; floor unless
// ceil_mode, where the last window still starts inside the input or the
// begin padding. Throws Error (with ctx) when the dilated window is larger
// than the padded input. Convolution and pooling, imported or trained, all
// size their outputs with this.
// Training's 2-D windows (PyTorch's arguments: the same padding on both
// sides): the output extent along spatial axis `axis` (0: H, 1: W) of
// x [N, C, H, W], checked as above, for the entry `op`.
int64_t window_extent_2d(const char* op, const Shape& x, int axis, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], const int64_t dilation[2]);

int64_t window_output_extent(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                             int64_t pad_end, bool ceil_mode, const ErrorContext& ctx = {});

}  // namespace tandem::ops
