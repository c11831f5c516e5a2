// Concatenation along one axis and its backward, as block copies: with
// outer = product of the extents before the axis and inner = after it, input
// i is `outer` rows of C_i * inner contiguous values, placed at an offset in
// each row of y. The backward is the same copy the other way (oneDNN's concat
// has no backward), so both directions share it.
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

// Copies each of `outer` rows of `width` values between a part (dense) and y
// (rows of b.row, starting at `offset`). to_y: part -> y, else y -> part,
// added when `accumulate`.
void copy_rows(const ops::ConcatBlocks& b, int64_t offset, int64_t width, float* part, float* y, bool to_y,
               bool accumulate) {
#pragma omp parallel for schedule(static) if (b.outer * width > (1 << 16))
  for (int64_t o = 0; o < b.outer; ++o) {
    float* p = part + o * width;
    float* q = y + o * b.row + offset;
    if (to_y) std::memcpy(q, p, size_t(width) * sizeof(float));
    else if (accumulate) add_into(p, q, width);
    else std::memcpy(p, q, size_t(width) * sizeof(float));
  }
}

}  // namespace

void concat_forward(void*, int64_t axis, std::span<const Tensor> xs, const Tensor& y) {
  const char* op = "concat_forward";
  Shape ys = ops::concat_output_shape(xs, axis);
  axis = normalize_axis(axis, int64_t(ys.size()));
  require_f32(op, {&y});
  require_shape(op, y, ys, "y");
  ops::ConcatBlocks b = ops::concat_blocks(ys, axis);
  int64_t offset = 0;
  for (const Tensor& x : xs) {
    require_f32(op, {&x});
    int64_t width = x.dim(axis) * b.inner;
    copy_rows(b, offset, width, x.data<float>(), y.data<float>(), true, false);
    offset += width;
  }
}

void concat_backward(void*, int64_t axis, const Tensor& dy, std::span<const int64_t> extents,
                     std::span<const GradOut> dxs) {
  const char* op = "concat_backward";
  require_f32(op, {&dy});
  axis = normalize_axis(axis, dy.rank());
  int64_t total = 0;
  for (int64_t e : extents) total += e;
  check(extents.size() == dxs.size() && total == dy.dim(axis),
        "the parts' extents do not add up to dy's along axis " + std::to_string(axis), op_context(op, dy));
  ops::ConcatBlocks b = ops::concat_blocks(dy.shape(), axis);
  int64_t offset = 0;
  for (size_t i = 0; i < dxs.size(); ++i) {
    int64_t width = extents[i] * b.inner;
    if (dxs[i].wanted()) {
      Shape want = dy.shape();
      want[size_t(axis)] = extents[i];
      require_f32(op, {&dxs[i].t});
      require_shape(op, dxs[i].t, want, "a part's gradient");
      copy_rows(b, offset, width, dxs[i].t.data<float>(), dy.data<float>(), false,
                dxs[i].mode == GradMode::accumulate);
    }
    offset += width;
  }
}

}  // namespace tandem::cpu::train
