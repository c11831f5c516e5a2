// Expand (numpy broadcast to a shape) and Tile (repeat along each dim), both
// as IndexCopy tables over a plain input of any dtype.
#include "cpu/index_copy.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

// Input dims align with the output's trailing dims; an extent-1 input dim is
// read with step 0.
KernelPlan make_expand(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  const Shape& out = op.outputs[0].shape;
  size_t elem = dtype_size(in.dtype), lead = out.size() - in.shape.size();
  std::vector<int64_t> strides = contiguous_strides(in.shape);
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < out.size(); ++d) {
    bool broadcast = d < lead || in.shape[d - lead] == 1;
    int64_t stride = d < lead ? 0 : strides[d - lead];
    tables.push_back(IndexCopy::strided(out[d], 0, broadcast ? 0 : 1, stride, elem));
  }
  IndexCopy copy(out, std::move(tables), elem);
  return plain_plan(op, std::make_unique<IndexCopyKernel>(std::move(copy)));
}

// Output index o of dim d reads input index o mod in[d].
KernelPlan make_tile(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  const Shape& out = op.outputs[0].shape;
  size_t elem = dtype_size(in.dtype);
  std::vector<int64_t> strides = contiguous_strides(in.shape);
  std::vector<std::vector<int64_t>> tables(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    for (int64_t o = 0; o < out[d]; ++o)
      tables[d].push_back((o % in.shape[d]) * strides[d] * int64_t(elem));
  IndexCopy copy(out, std::move(tables), elem);
  return plain_plan(op, std::make_unique<IndexCopyKernel>(std::move(copy)));
}

}  // namespace

void register_expand_kernels() {
  register_kernel("Expand", make_expand);
  register_kernel("Tile", make_tile);
}

}  // namespace tandem::cpu
