#include "ops/spatial.h"

#include <algorithm>

#include "core/error.h"

namespace tandem::ops {

namespace {

Shape ints_or(const Attributes& a, const std::string& name, size_t k, int64_t fill, int64_t min) {
  Shape v = a.get_ints(name, Shape(k, fill));
  check(v.size() == k, "attribute '" + name + "' has " + std::to_string(v.size()) +
                           " values, expected " + std::to_string(k));
  for (int64_t x : v)
    check(x >= min, "attribute '" + name + "' has value " + std::to_string(x) + " below " +
                        std::to_string(min));
  return v;
}

}  // namespace

int64_t window_output_extent(int64_t in, int64_t kernel, int64_t s, int64_t dilation, int64_t pb, int64_t pe,
                             bool ceil_mode, const ErrorContext& ctx) {
  const int64_t dk = (kernel - 1) * dilation + 1;
  const int64_t span = in + pb + pe - dk;
  check(span >= 0, "window " + std::to_string(dk) + " is larger than the padded input " + std::to_string(in + pb + pe),
        ctx);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // As PyTorch and ONNX Runtime do: the last window must start inside the
  // input or the begin padding, never entirely in the end padding.
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

int64_t window_extent_2d(const char* op, const Shape& x, int axis, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], const int64_t dilation[2]) {
  const ErrorContext ctx{"", "", op, shape_str(x)};
  const int i = axis;
  check(kernel[i] >= 1 && stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0,
        "kernel, stride and dilation must be >= 1 and padding >= 0", ctx);
  return window_output_extent(x[size_t(2 + i)], kernel[i], stride[i], dilation[i], padding[i], padding[i], false, ctx);
}

int64_t Window::effective_pad_end(size_t i, int64_t in) const {
  int64_t dk = (kernel[i] - 1) * dilations[i] + 1;
  return std::max(pads_end[i], (out[i] - 1) * strides[i] + dk - in - pads_begin[i]);
}

Window resolve_window(const Attributes& a, const Shape& kernel, const Shape& in, bool allow_ceil_mode) {
  size_t k = kernel.size();
  check(in.size() == k, "kernel rank does not match the input's spatial rank");
  // Window attributes come from the model file: bounded so that the window
  // arithmetic below stays far from int64's range, and strides never 0.
  constexpr int64_t kMaxWindow = int64_t(1) << 31;
  for (int64_t x : kernel)
    check(x >= 1 && x <= kMaxWindow, "kernel extent " + std::to_string(x) + " is not in [1, 2^31]");
  Window w;
  w.kernel = kernel;
  w.strides = ints_or(a, "strides", k, 1, 1);
  w.dilations = ints_or(a, "dilations", k, 1, 1);
  w.ceil_mode = a.get_int("ceil_mode", 0) != 0;
  check(allow_ceil_mode || !w.ceil_mode, "ceil_mode is not an attribute of this op");
  for (size_t i = 0; i < k; ++i)
    check(w.strides[i] >= 1 && w.strides[i] <= kMaxWindow && w.dilations[i] >= 1 && w.dilations[i] <= kMaxWindow,
          "strides and dilations must be in [1, 2^31]");
  Shape pads = ints_or(a, "pads", 2 * k, 0, 0);
  for (int64_t p : pads) check(p >= -kMaxWindow && p <= kMaxWindow, "pad " + std::to_string(p) + " is out of range");
  w.pads_begin.assign(pads.begin(), pads.begin() + long(k));
  w.pads_end.assign(pads.begin() + long(k), pads.end());
  std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  check(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" ||
            auto_pad == "SAME_LOWER",
        "unknown auto_pad '" + auto_pad + "'");
  w.out.resize(k);
  for (size_t i = 0; i < k; ++i) {
    int64_t dk = (kernel[i] - 1) * w.dilations[i] + 1, s = w.strides[i];
    if (auto_pad == "VALID") w.pads_begin[i] = w.pads_end[i] = 0;
    if (in[i] < 0) {
      w.out[i] = -1;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output is ceil(in / stride); the pad needed is split, the odd one
      // going to the end (UPPER) or the beginning (LOWER).
      w.out[i] = (in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * s + dk - in[i]);
      int64_t small = total / 2;
      w.pads_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads_end[i] = total - w.pads_begin[i];
    } else {
      w.out[i] = window_output_extent(in[i], kernel[i], s, w.dilations[i], w.pads_begin[i], w.pads_end[i],
                                      w.ceil_mode);
    }
  }
  return w;
}

}  // namespace tandem::ops
