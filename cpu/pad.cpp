// Pad in constant, reflect, edge and wrap modes through IndexCopy tables:
// output index o of dim d reads input index ops::pad_source_index(o, ...)
// (constant: outside reads the fill element).
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

// The fill element as bytes of the data dtype: Pad-2's float attribute
// `value`, else zero (Pad-11+ reads input 2 at run time when present).
std::vector<uint8_t> fill_bytes(const OpDesc& op) {
  DType t = op.inputs[0].dtype;
  std::vector<uint8_t> bytes(dtype_size(t), 0);
  if (op.opset < 11) {
    double v = op.attributes().get_float("value", 0.f);
    visit_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      store<T>(bytes.data(), 0, convert_num<num_t<T>>(v));
    });
  }
  return bytes;
}

KernelPlan make_pad(const OpDesc& op) {
  const TensorDesc& in = op.inputs[0];
  const Shape& out = op.outputs[0].shape;
  ops::PadSpec s = ops::pad_spec(ops::infer_context_of(op));
  size_t elem = dtype_size(in.dtype);
  std::vector<int64_t> strides = contiguous_strides(in.shape);
  std::vector<std::vector<int64_t>> tables(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    for (int64_t o = 0; o < out[d]; ++o) {
      int64_t i = ops::pad_source_index(o, s.begin[d], in.shape[d], s.mode);
      tables[d].push_back(i < 0 ? kNoSource : i * strides[d] * int64_t(elem));
    }
  IndexCopy copy(out, std::move(tables), elem);
  int fill_input = op.opset >= 11 && op.has_input(2) ? 2 : -1;
  return plain_plan(op, std::make_unique<IndexCopyKernel>(std::move(copy), fill_bytes(op), fill_input));
}

}  // namespace

void register_pad_kernels() { register_kernel("Pad", make_pad); }

}  // namespace tandem::cpu
