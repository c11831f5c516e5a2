// ScatterND: out = data with slices replaced (or combined, `reduction`) by
// updates at int64 index tuples. indices [..., k] address data's first k
// dims; updates = indices.shape[:-1] + data.shape[k:]. Index values are
// checked by the kernel at run time.
#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

std::vector<TensorDesc> infer_scatter_nd(const InferContext& c) {
  const Shape &data = c.shape(0), &idx = c.shape(1), &upd = c.shape(2);
  check(c.inputs[1].dtype == DType::i64, "indices must be int64, got " + c.inputs[1].str());
  check(c.inputs[2].dtype == c.inputs[0].dtype, "updates dtype differs from data: " + c.inputs[2].str());
  check(!data.empty() && !idx.empty(), "data and indices need rank >= 1");
  int64_t k = idx.back();
  check(k >= 1 && k <= int64_t(data.size()),
        "indices' last extent " + std::to_string(k) + " does not fit data rank " + std::to_string(data.size()));
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  check(upd == want, "updates shape " + shape_str(upd) + " should be " + shape_str(want));
  std::string r = c.attributes().get_string("reduction", "none");
  check(r == "none" || r == "add" || r == "mul" || r == "max" || r == "min", "reduction '" + r + "' is not supported");
  check(r == "none" || c.inputs[0].dtype != DType::boolean, "ScatterND reduction on bool");
  return {TensorDesc{c.inputs[0].dtype, data}};
}

}  // namespace

void register_scatter_schemas() { register_schema({"ScatterND", 3, 3, infer_scatter_nd}); }

}  // namespace tandem::ops
