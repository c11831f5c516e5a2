#include "cpu/index_copy.h"

#include <cstring>

namespace tandem::cpu {

namespace {
// Below this many output bytes a copy stays on one thread.
constexpr int64_t kParallelBytes = int64_t(1) << 18;

inline void copy_elem(char* dst, const char* src, size_t elem) {
  switch (elem) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, elem);
  }
}
}  // namespace

IndexCopy::IndexCopy(Shape out_shape, std::vector<std::vector<int64_t>> offsets, size_t elem_bytes)
    : out_(std::move(out_shape)), offsets_(std::move(offsets)), elem_(elem_bytes) {
  int64_t n = shape_numel(out_);
  if (!out_.empty()) {
    row_len_ = out_.back();
    rows_ = row_len_ == 0 ? 0 : n / row_len_;
    const std::vector<int64_t>& last = offsets_.back();
    contiguous_ = true;
    for (int64_t o = 0; o < row_len_; ++o)
      contiguous_ &= last[size_t(o)] != kNoSource && last[size_t(o)] == last[0] + o * int64_t(elem_);
  } else {
    rows_ = 1;  // a scalar is one row of one element with no tables
  }
}

std::vector<int64_t> IndexCopy::strided(int64_t extent, int64_t start, int64_t step, int64_t stride,
                                        size_t elem_bytes) {
  std::vector<int64_t> t(static_cast<size_t>(extent));
  for (int64_t o = 0; o < extent; ++o) t[size_t(o)] = (start + o * step) * stride * int64_t(elem_bytes);
  return t;
}

void IndexCopy::copy_row(int64_t row, const char* in, char* out, const char* fill) const {
  // Decompose the row index into output indices of dims [0, rank-1).
  int64_t base = 0;
  bool filled = false;
  int64_t rem = row;
  for (size_t d = out_.empty() ? 0 : out_.size() - 1; d-- > 0;) {
    int64_t off = offsets_[d][size_t(rem % out_[d])];
    rem /= out_[d];
    if (off == kNoSource) filled = true;
    base += off;
  }
  char* dst = out + row * row_len_ * int64_t(elem_);
  if (out_.empty()) return copy_elem(dst, in, elem_);
  if (filled) {
    for (int64_t o = 0; o < row_len_; ++o) copy_elem(dst + o * int64_t(elem_), fill, elem_);
    return;
  }
  const std::vector<int64_t>& last = offsets_.back();
  if (contiguous_) {
    std::memcpy(dst, in + base + last[0], size_t(row_len_) * elem_);
    return;
  }
  for (int64_t o = 0; o < row_len_; ++o) {
    int64_t off = last[size_t(o)];
    copy_elem(dst + o * int64_t(elem_), off == kNoSource ? fill : in + base + off, elem_);
  }
}

void IndexCopy::run(const void* in, void* out, const void* fill) const {
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  const char* f = static_cast<const char*>(fill);
  bool parallel = rows_ * row_len_ * int64_t(elem_) >= kParallelBytes;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < rows_; ++r) copy_row(r, src, dst, f);
}

void IndexCopyKernel::run(const void* const* in, void* const* out, const RunContext&) {
  const void* fill = fill_input_ >= 0 && in[fill_input_] ? in[fill_input_] : fill_.data();
  copy_.run(in[0], out[0], fill);
}

KernelPlan plain_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel) {
  KernelPlan plan;
  plan.kernel = std::move(kernel);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts.assign(op.outputs.size(), Layout::plain);
  return plan;
}

KernelPlan elementwise_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel) {
  KernelPlan plan = plain_plan(op, std::move(kernel));
  const Layout l = op.inputs.empty() ? Layout::plain : op.inputs[0].layout;
  if (l == Layout::plain || op.outputs.size() != 1) return plan;
  const Shape& shape = op.outputs[0].shape;
  const int64_t block = layout_block(l);
  if (shape.size() != 4 || (block > 1 && shape[1] % block != 0)) return plan;
  for (const TensorDesc& t : op.inputs)
    if (t.layout != l || t.shape != shape) return plan;
  plan.input_layouts.assign(op.inputs.size(), l);
  plan.output_layouts = {l};
  return plan;
}

}  // namespace tandem::cpu
