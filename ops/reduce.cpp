// Reductions over axes: ReduceMean, ReduceSum, ReduceMax, ReduceMin, and the
// index reductions ArgMax / ArgMin (int64 output).
#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

ReduceSpec reduce_spec(const InferContext& c) {
  const Shape& in = c.shape(0);
  const Attributes& a = c.attributes();
  // ReduceSum took axes as an input from opset 13, the others from 18.
  int input_since = c.op_type == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes = list_arg(c, "axes", 1, input_since).value_or(std::vector<int64_t>{});
  ReduceSpec s;
  s.keepdims = a.get_int("keepdims", 1) != 0;
  s.reduced.assign(in.size(), axes.empty() && a.get_int("noop_with_empty_axes", 0) == 0);
  for (int64_t ax : normalize_axes(axes, int64_t(in.size()))) s.reduced[size_t(ax)] = true;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!s.reduced[i]) s.out.push_back(in[i]);
    else if (s.keepdims) s.out.push_back(1);
  }
  return s;
}

namespace {

std::vector<TensorDesc> infer_reduce(const InferContext& c) {
  DType t = c.inputs[0].dtype;
  check(t != DType::boolean, c.op_type + " does not take bool input");
  return {TensorDesc{t, reduce_spec(c).out}};
}

std::vector<TensorDesc> infer_arg_reduce(const InferContext& c) {
  Shape out = c.shape(0);
  check(!out.empty(), c.op_type + " needs rank >= 1");
  check(c.inputs[0].dtype != DType::boolean, c.op_type + " does not take bool input");
  int64_t axis = normalize_axis(c.attributes().get_int("axis", 0), int64_t(out.size()));
  if (c.attributes().get_int("keepdims", 1) != 0) out[size_t(axis)] = 1;
  else out.erase(out.begin() + axis);
  return {TensorDesc{DType::i64, out}};
}

}  // namespace

void register_reduce_schemas() {
  for (const char* t : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"})
    register_schema({t, 1, 2, infer_reduce});
  register_schema({"ArgMax", 1, 1, infer_arg_reduce});
  register_schema({"ArgMin", 1, 1, infer_arg_reduce});
}

}  // namespace tandem::ops
