#include "ops/softmax.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

SoftmaxSplit softmax_split(const Attributes& a, int opset, const Shape& x) {
  int64_t rank = int64_t(x.size());
  check(rank >= 1, "softmax of a scalar");
  bool coerce = opset < 13;
  int64_t axis = normalize_axis(a.get_int("axis", coerce ? 1 : -1), rank);
  SoftmaxSplit s;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = x[size_t(i)];
    if (i < axis) s.outer *= d;
    else if (i == axis || coerce) s.len *= d;
    else s.inner *= d;
  }
  return s;
}

namespace {

std::vector<TensorDesc> infer_softmax(const InferContext& c) {
  check(is_floating(c.inputs[0].dtype), "softmax needs a floating-point input, got " + c.inputs[0].str());
  int64_t rank = int64_t(c.shape(0).size());
  check(rank >= 1, "softmax of a scalar");
  normalize_axis(c.attributes().get_int("axis", c.opset < 13 ? 1 : -1), rank);
  return {TensorDesc{c.inputs[0].dtype, c.shape(0)}};
}

}  // namespace

void register_softmax_schemas() {
  register_schema({"Softmax", 1, 1, infer_softmax});
  register_schema({"LogSoftmax", 1, 1, infer_softmax});
}

}  // namespace tandem::ops
