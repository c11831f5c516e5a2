#include "core/train_backend.h"

namespace tandem {

namespace {

ErrorContext shape_context(const char* op, const Shape& s) { return {"", "", op, shape_str(s)}; }

// Output extent of a window sliding over `in` (floor mode, PyTorch's default).
int64_t window_extent(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
  return (in + 2 * pad - d * (k - 1) - 1) / s + 1;
}

void check_window(const char* op, const Shape& x, const int64_t k[2], const int64_t s[2],
                  const int64_t pad[2], const int64_t d[2]) {
  for (int i = 0; i < 2; ++i) {
    TANDEM_CHECK(k[i] >= 1 && s[i] >= 1 && d[i] >= 1 && pad[i] >= 0,
                 "kernel, stride and dilation must be >= 1 and padding >= 0", shape_context(op, x));
    TANDEM_CHECK(window_extent(x[size_t(2 + i)], k[i], s[i], pad[i], d[i]) >= 1,
                 "the window does not fit in the padded input", shape_context(op, x));
  }
}

}  // namespace

Shape conv2d_output_shape(const Conv2dParams& p, const Shape& x, const Shape& w) {
  TANDEM_CHECK(x.size() == 4 && w.size() == 4,
               "conv2d wants x [N,C,H,W] and w [M,C/groups,KH,KW], w is " + shape_str(w),
               shape_context("conv2d", x));
  int64_t g = p.groups;
  TANDEM_CHECK(g >= 1 && x[1] % g == 0 && w[0] % g == 0 && w[1] * g == x[1],
               "conv2d: channels " + std::to_string(x[1]) + " and weight " + shape_str(w) +
                   " do not match groups=" + std::to_string(g),
               shape_context("conv2d", x));
  int64_t k[2] = {w[2], w[3]};
  check_window("conv2d", x, k, p.stride, p.padding, p.dilation);
  return {x[0], w[0], window_extent(x[2], k[0], p.stride[0], p.padding[0], p.dilation[0]),
          window_extent(x[3], k[1], p.stride[1], p.padding[1], p.dilation[1])};
}

Shape pool2d_output_shape(const Pool2dParams& p, const Shape& x) {
  const char* op = p.kind == PoolKind::max ? "max_pool2d" : "avg_pool2d";
  TANDEM_CHECK(x.size() == 4, "pooling wants x [N,C,H,W]", shape_context(op, x));
  TANDEM_CHECK(p.kind == PoolKind::max || (p.dilation[0] == 1 && p.dilation[1] == 1),
               "average pooling has no dilation", shape_context(op, x));
  check_window(op, x, p.kernel, p.stride, p.padding, p.dilation);
  for (int i = 0; i < 2; ++i)
    TANDEM_CHECK(2 * p.padding[i] <= p.kernel[i], "padding must be at most half the kernel",
                 shape_context(op, x));
  return {x[0], x[1], window_extent(x[2], p.kernel[0], p.stride[0], p.padding[0], p.dilation[0]),
          window_extent(x[3], p.kernel[1], p.stride[1], p.padding[1], p.dilation[1])};
}

Shape linear_output_shape(const Shape& x, const Shape& w) {
  TANDEM_CHECK(x.size() == 2 && w.size() == 2 && x[1] == w[1],
               "linear wants x [N,K] and w [M,K], w is " + shape_str(w),
               shape_context("linear", x));
  return {x[0], w[0]};
}

Shape concat_output_shape(std::span<const Tensor> xs, int64_t axis) {
  TANDEM_CHECK(!xs.empty(), "concat of no tensors", shape_context("concat", {}));
  Shape y = xs[0].shape();
  size_t a = size_t(normalize_axis(axis, int64_t(y.size())));
  y[a] = 0;
  for (const Tensor& x : xs) {
    Shape s = x.shape();
    TANDEM_CHECK(s.size() == y.size(), "concat of tensors of different ranks",
                 shape_context("concat", s));
    for (size_t i = 0; i < s.size(); ++i)
      TANDEM_CHECK(i == a || s[i] == y[i],
                   "concat: extents differ off axis " + std::to_string(a) + " from " +
                       shape_str(xs[0].shape()),
                   shape_context("concat", s));
    y[a] += s[a];
  }
  return y;
}

bool sums_to(const Shape& src, const Shape& dst) {
  if (src.size() != dst.size()) return false;
  for (size_t i = 0; i < src.size(); ++i)
    if (dst[i] != src[i] && dst[i] != 1) return false;
  return true;
}

bool layout_free(const Shape& s) { return s.size() == 4 && s[2] == 1 && s[3] == 1; }

ConcatBlocks concat_blocks(const Shape& y, int64_t axis) {
  ConcatBlocks b;
  for (int64_t i = 0; i < axis; ++i) b.outer *= y[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < y.size(); ++i) b.inner *= y[i];
  b.row = y[size_t(axis)] * b.inner;
  return b;
}

ErrorContext op_context(const char* op, const Tensor& t) {
  return {"", "", op, t.defined() ? shape_str(t.shape()) : std::string()};
}

void require_shape(const char* op, const Tensor& t, const Shape& want, const char* what) {
  TANDEM_CHECK(t.defined() && t.shape() == want,
               std::string(what) + " must be " + shape_str(want) +
                   (t.defined() ? ", got " + shape_str(t.shape()) : std::string(", got none")),
               op_context(op, t));
}

Shape add_output_shape(const Shape& a, const Shape& b) {
  TANDEM_CHECK(a.size() == b.size(),
               "add wants tensors of the same rank, the other is " + shape_str(b),
               shape_context("add", a));
  Shape y = broadcast_shapes(a, b);
  TANDEM_CHECK(y == a || y == b,
               "add: one input must have the output's shape, the other is " + shape_str(b),
               shape_context("add", a));
  return y;
}

}  // namespace tandem
