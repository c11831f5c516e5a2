// Gather: out = data indexed along `axis` by an int32/int64 index tensor.
// out shape = data[:axis] + indices + data[axis+1:]. Index values are checked
// by the kernel at run time (they need not be constant).
#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

std::vector<TensorDesc> infer_gather(const InferContext& c) {
  const Shape& data = c.shape(0);
  check(!data.empty(), "Gather data must have rank >= 1");
  DType it = c.inputs[1].dtype;
  check(it == DType::i64 || it == DType::i32, "indices must be int32 or int64, got " + c.inputs[1].str());
  int64_t axis = normalize_axis(c.attributes().get_int("axis", 0), int64_t(data.size()));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), c.shape(1).begin(), c.shape(1).end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {TensorDesc{c.inputs[0].dtype, out}};
}

}  // namespace

void register_gather_schemas() { register_schema({"Gather", 2, 2, infer_gather}); }

}  // namespace tandem::ops
