// Concat for every dtype and rank; training's concat entries follow.
//   f32/bf16 4-D with no empty input: oneDNN concat. When an input arrives in
//   a non-plain layout L (nChw16c, nChw8c, nhwc) all inputs are requested in
//   L and Y is L, provided blocked channel concats have channel counts that
//   are multiples of the block; otherwise plain. A blocked channel concat
//   is block copies, as a plain one is (below).
//   Anything else (int64 shape vectors, other ranks): a memcpy loop over
//   plain tensors: Y viewed as [outer, sum(extent_i * inner)].
#include <cstring>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/concat.h"

namespace tandem::cpu {

namespace {

// Concatenation as block copies (ops::concat_blocks), both directions and
// both uses: each of b.outer rows of `width` elements of `esize` bytes
// between a dense part and y, whose rows are b.row elements, from element
// `offset` of each. to_y: part -> y, else y -> part.
void copy_rows(const ops::ConcatBlocks& b, size_t esize, int64_t offset, int64_t width, const void* src, void* dst,
               bool to_y) {
  const size_t bytes = size_t(width) * esize;
  if (bytes == 0) return;  // an empty part may have no buffer
#pragma omp parallel for schedule(static) if (b.outer * int64_t(bytes) > (1 << 18))
  for (int64_t o = 0; o < b.outer; ++o) {
    const size_t dense = size_t(o) * bytes, strided = size_t(o * b.row + offset) * esize;
    std::memcpy(static_cast<char*>(dst) + (to_y ? strided : dense),
                static_cast<const char*>(src) + (to_y ? dense : strided), bytes);
  }
}

// Y = concat_i X_i along the axis, any dtype, as block copies: plain, or a
// channel concat in a blocked layout (nChw16c, nChw8c) whose parts' channel
// counts are multiples of the block, where each image's channel blocks lie
// as a plain tensor's channels do. The copies are cut into pieces of about
// kPiece bytes so that a batch of one spreads over the threads: oneDNN's
// concat of the detector's two f32[1,64,128,128] nChw16c halves took 3 ms
// on two threads, its head's three concatenations 19% of the network.
class CopyConcatKernel : public Kernel {
 public:
  CopyConcatKernel(ops::ConcatBlocks b, size_t esize, std::vector<int64_t> widths)
      : b_(b), esize_(esize), widths_(std::move(widths)) {
    constexpr size_t kPiece = size_t(1) << 17;
    constexpr int64_t kMaxPieces = 1 << 12;
    int64_t count = 0;
    for (int64_t w : widths_)
      count += b_.outer * int64_t((size_t(w) * esize_ + kPiece - 1) / kPiece);
    if (count > kMaxPieces) return;  // many small rows (channels last): copy_rows spreads them
    int64_t offset = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      const size_t bytes = size_t(widths_[i]) * esize_;
      for (int64_t o = 0; o < b_.outer; ++o)
        for (size_t at = 0; at < bytes; at += kPiece)
          pieces_.push_back({i, size_t(o) * bytes + at, size_t(o * b_.row + offset) * esize_ + at,
                             std::min(kPiece, bytes - at)});
      offset += widths_[i];
    }
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (pieces_.empty()) {
      int64_t offset = 0;
      for (size_t i = 0; i < widths_.size(); ++i) {
        copy_rows(b_, esize_, offset, widths_[i], in[i], out[0], true);
        offset += widths_[i];
      }
      return;
    }
    const int64_t n = int64_t(pieces_.size());
#pragma omp parallel for schedule(static) if (n > 1)
    for (int64_t k = 0; k < n; ++k) {
      const Piece& p = pieces_[size_t(k)];
      std::memcpy(static_cast<char*>(out[0]) + p.to, static_cast<const char*>(in[p.part]) + p.from,
                  p.bytes);
    }
  }

 private:
  struct Piece {
    size_t part, from, to, bytes;
  };
  ops::ConcatBlocks b_;
  size_t esize_;
  std::vector<int64_t> widths_;  // each input's extent along the axis * inner
  std::vector<Piece> pieces_;    // empty: too many, copied row by row
};

KernelPlan make_copy_concat(const OpDesc& op, int64_t axis, Layout layout = Layout::plain) {
  ops::ConcatBlocks b = ops::concat_blocks(op.outputs[0].shape, axis);
  std::vector<int64_t> widths;
  for (const TensorDesc& t : op.inputs) widths.push_back(t.shape[size_t(axis)] * b.inner);
  KernelPlan plan;
  plan.kernel = std::make_unique<CopyConcatKernel>(b, dtype_size(op.outputs[0].dtype), std::move(widths));
  plan.input_layouts.assign(op.inputs.size(), layout);
  plan.output_layouts = {layout};
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
  if (axis == 1 && layout_block(l) > 1) return make_copy_concat(op, axis, l);
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

// dx_part += the part's rows of dy (copy_rows' accumulating direction, f32).
void add_rows(const ops::ConcatBlocks& b, int64_t offset, int64_t width, float* part, const float* dy) {
#pragma omp parallel for schedule(static) if (b.outer * width > (1 << 16))
  for (int64_t o = 0; o < b.outer; ++o) add_into(part + o * width, dy + o * b.row + offset, width);
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
    copy_rows(b, sizeof(float), offset, width, x.raw(), y.raw(), true);
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
      if (dxs[i].mode == GradMode::accumulate) add_rows(b, offset, width, dxs[i].t.data<float>(), dy.data<float>());
      else copy_rows(b, sizeof(float), offset, width, dy.raw(), dxs[i].t.raw(), false);
    }
    offset += width;
  }
}

}  // namespace tandem::cpu::train
