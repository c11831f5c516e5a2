// Concat for every dtype and rank; training's concat entries follow.
//   f32/bf16 4-D with no empty input: oneDNN concat. When an input arrives in
//   a non-plain layout L (nChw16c, nChw8c, nhwc) all inputs are requested in
//   L and Y is L, provided blocked channel concats have channel counts that
//   are multiples of the block; otherwise plain.
//   Anything else (int64 shape vectors, other ranks): a memcpy loop over
//   plain tensors: Y viewed as [outer, sum(extent_i * inner)].
#include <cstring>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/concat.h"

namespace tandem::cpu {

namespace {

// Y[o, :] = concat_i X_i[o, :], rows of row_bytes[i] per input.
class CopyConcatKernel : public Kernel {
 public:
  CopyConcatKernel(int64_t outer, std::vector<size_t> row_bytes)
      : outer_(outer), row_bytes_(std::move(row_bytes)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    char* y = static_cast<char*>(out[0]);
    for (int64_t o = 0; o < outer_; ++o) {
      for (size_t i = 0; i < row_bytes_.size(); ++i) {
        if (row_bytes_[i] == 0) continue;
        std::memcpy(y, static_cast<const char*>(in[i]) + size_t(o) * row_bytes_[i], row_bytes_[i]);
        y += row_bytes_[i];
      }
    }
  }

 private:
  int64_t outer_;
  std::vector<size_t> row_bytes_;
};

KernelPlan make_copy_concat(const OpDesc& op, int64_t axis) {
  const Shape& y = op.outputs[0].shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(y.size()); ++d) {
    if (d < axis) outer *= y[size_t(d)];
    if (d > axis) inner *= y[size_t(d)];
  }
  std::vector<size_t> rows;
  size_t esize = dtype_size(op.outputs[0].dtype);
  for (const TensorDesc& t : op.inputs) rows.push_back(size_t(t.shape[size_t(axis)] * inner) * esize);
  KernelPlan plan;
  plan.kernel = std::make_unique<CopyConcatKernel>(outer, std::move(rows));
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

// Shared layout for a 4-D concat along `axis`.
Layout concat_layout(const OpDesc& op, int64_t axis) {
  Layout l = Layout::plain;
  for (const TensorDesc& t : op.inputs)
    if (t.layout != Layout::plain) {
      l = t.layout;
      break;
    }
  int64_t block = layout_block(l);
  if (axis == 1 && block > 1)
    for (const TensorDesc& t : op.inputs)
      if (t.shape[1] % block != 0) return Layout::plain;
  return l;
}

KernelPlan make_concat(const OpDesc& op) {
  const TensorDesc& first = op.inputs[0];
  int64_t axis = ops::concat_axis(op.attributes(), int64_t(first.shape.size()));
  bool dnnl_ok = (first.dtype == DType::f32 || first.dtype == DType::bf16) && first.shape.size() == 4;
  for (const TensorDesc& t : op.inputs) dnnl_ok = dnnl_ok && t.numel() > 0;
  if (!dnnl_ok) return make_copy_concat(op, axis);

  Layout l = concat_layout(op, axis);
  std::vector<dnnl::memory::desc> srcs;
  for (const TensorDesc& t : op.inputs) srcs.push_back(md(t.dtype, t.shape, l));
  dnnl::memory::desc dst = md(first.dtype, op.outputs[0].shape, l);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  dnnl::concat::primitive_desc pd(dst, int(axis), srcs, engine(), attr);
  auto k = std::make_unique<PrimitiveKernel>(dnnl::concat(pd), pd.scratchpad_desc());
  for (size_t i = 0; i < srcs.size(); ++i) k->bind_input(DNNL_ARG_MULTIPLE_SRC + int(i), int(i), srcs[i]);
  k->bind_output(DNNL_ARG_DST, 0, dst);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(op.inputs.size(), l);
  plan.output_layouts = {l};
  return plan;
}

}  // namespace

void register_concat_kernels() { register_kernel("Concat", make_concat); }

}  // namespace tandem::cpu

// Concatenation along one axis and its backward, as block copies: with
// outer = product of the extents before the axis and inner = after it, input
// i is `outer` rows of C_i * inner contiguous values, placed at an offset in
// each row of y. The backward is the same copy the other way (oneDNN's concat
// has no backward), so both directions share it.
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
