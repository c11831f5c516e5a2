// Slice (any steps, through IndexCopy) and Split (one memcpy per output row).
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

KernelPlan make_slice(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  ops::SliceSpec s = ops::slice_spec(ops::infer_context_of(op));
  std::vector<int64_t> strides = contiguous_strides(in.shape);
  size_t elem = dtype_size(in.dtype);
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < in.shape.size(); ++d)
    tables.push_back(IndexCopy::strided(s.out[d], s.start[d], s.step[d], strides[d], elem));
  IndexCopy copy(s.out, std::move(tables), elem);
  return plain_plan(op, std::make_unique<IndexCopyKernel>(std::move(copy)));
}

// Input viewed as [outer, extent, inner]; output k takes rows
// [first_k, first_k + size_k) of the middle dim.
class SplitKernel : public Kernel {
 public:
  SplitKernel(int64_t outer, int64_t extent, int64_t inner_bytes, std::vector<int64_t> sizes)
      : outer_(outer), extent_(extent), inner_(inner_bytes), sizes_(std::move(sizes)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const char* src = static_cast<const char*>(in[0]);
    int64_t first = 0;
    for (size_t k = 0; k < sizes_.size(); ++k) {
      int64_t chunk = sizes_[k] * inner_;
      char* dst = static_cast<char*>(out[k]);
      if (chunk > 0)
        for (int64_t o = 0; o < outer_; ++o)
          std::memcpy(dst + o * chunk, src + (o * extent_ + first) * inner_, size_t(chunk));
      first += sizes_[k];
    }
  }

 private:
  int64_t outer_, extent_, inner_;
  std::vector<int64_t> sizes_;
};

KernelPlan make_split(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  ops::SplitSpec s = ops::split_spec(ops::infer_context_of(op));
  const Shape& shape = in.shape;
  size_t axis = size_t(s.axis);
  int64_t outer = shape_numel(Shape(shape.begin(), shape.begin() + std::ptrdiff_t(axis)));
  int64_t inner = shape_numel(Shape(shape.begin() + std::ptrdiff_t(axis) + 1, shape.end()));
  auto k = std::make_unique<SplitKernel>(outer, shape[axis], inner * int64_t(dtype_size(in.dtype)), s.sizes);
  return plain_plan(op, std::move(k));
}

}  // namespace

void register_slice_kernels() {
  register_kernel("Slice", make_slice);
  register_kernel("Split", make_split);
}

}  // namespace tandem::cpu
