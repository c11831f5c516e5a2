// TopK: Values has the input's dtype, Indices is int64; both have the input's
// shape with the axis extent replaced by k.
#include "ops/topk.h"

#include "ops/all_ops.h"

namespace tandem::ops {

TopKSpec topk_spec(const InferContext& c) {
  const Shape& in = c.shape(0);
  const Attributes& a = c.attributes();
  TopKSpec s;
  s.axis = normalize_axis(a.get_int("axis", -1), int64_t(in.size()));
  if (c.opset >= 11) {
    s.largest = a.get_int("largest", 1) != 0;
    s.sorted = a.get_int("sorted", 1) != 0;
  }
  if (c.opset < 10) {
    s.k = a.get_int("k");
  } else {
    check(c.has_input(1), "TopK needs a K input from opset 10");
    const TensorDesc& kd = c.inputs[1];
    check(kd.dtype == DType::i64 && (kd.shape == Shape{1} || kd.shape.empty()),
          "K must be a one-element int64 tensor, got " + kd.str());
    if (1 < c.constants.size() && c.constants[1]) s.k = c.constants[1]->int_at(0);
    else return s;
  }
  int64_t extent = in[size_t(s.axis)];
  check(s.k >= 0, "K " + std::to_string(s.k) + " is negative");
  check(extent < 0 || s.k <= extent,
        "K " + std::to_string(s.k) + " exceeds the axis extent " + std::to_string(extent));
  return s;
}

namespace {

std::vector<TensorDesc> infer_topk(const InferContext& c) {
  check(c.inputs[0].dtype != DType::boolean, "TopK does not take bool input");
  check(!c.shape(0).empty(), "TopK needs an input of rank >= 1");
  TopKSpec s = topk_spec(c);
  Shape out = c.shape(0);
  out[size_t(s.axis)] = s.k;
  return {TensorDesc{c.inputs[0].dtype, out}, TensorDesc{DType::i64, out}};
}

}  // namespace

void register_topk_schemas() { register_schema({"TopK", 1, 2, infer_topk}); }

}  // namespace tandem::ops
