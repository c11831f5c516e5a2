#include "ops/softmax.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

SoftmaxSplit softmax_split(const Attributes& a, int opset, const Shape& x) {
  int64_t rank = int64_t(x.size());
  check(rank >= 1, "softmax of a scalar");
  bool coerce = opset < 13;
  int64_t axis = normalize_axis(a.get_int("axis", coerce ? 1 : -1), rank);
  // Checked products (shape_numel) of the extents before, at and after the
  // axis: a model file may declare extents whose product overflows.
  const auto at = x.begin() + axis;
  SoftmaxSplit s;
  s.outer = shape_numel(Shape(x.begin(), at));
  s.len = shape_numel(Shape(at, coerce ? x.end() : at + 1));
  s.inner = coerce ? 1 : shape_numel(Shape(at + 1, x.end()));
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
