// Helpers shared by the shape-op schemas (ops/reshape.cpp, slice.cpp, ...).
#include "ops/shape_ops.h"

#include <limits>

namespace tandem::ops {

InferContext infer_context_of(const OpDesc& op) {
  InferContext c;
  c.op_type = op.op_type;
  c.node = op.node;
  c.attrs = op.attrs;
  c.opset = op.opset;
  c.inputs = op.inputs;
  c.present = op.present;
  c.constants = op.constants;
  c.num_outputs = int(op.outputs.size());
  return c;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank);
    check(!seen[size_t(n)], "axis " + std::to_string(a) + " is repeated");
    seen[size_t(n)] = true;
    out.push_back(n);
  }
  return out;
}

std::optional<std::vector<int64_t>> list_arg(const InferContext& c, const char* name, size_t index,
                                             int input_since) {
  if (c.opset >= input_since && c.has_input(index)) {
    const Tensor& t = c.constant(index);
    check(t.dtype() == DType::i64 || t.dtype() == DType::i32,
          std::string("'") + name + "' input must be int64, got " + t.desc().str());
    check(t.rank() <= 1, std::string("'") + name + "' input must be 1-D, got " + t.desc().str());
    return t.to_int_vector();
  }
  // Also accepted at newer opsets: harmless, and some exporters emit it.
  if (c.attributes().has(name)) return c.attributes().get_ints(name);
  return std::nullopt;
}


void check_size(const TensorDesc& d) {
  if (!shape_is_static(d.shape)) return;
  int64_t n = d.numel();  // throws on int64 overflow
  check(n <= (int64_t(1) << 62) / int64_t(dtype_size(d.dtype)),
        "output " + d.str() + " is too large");
}

}  // namespace tandem::ops
