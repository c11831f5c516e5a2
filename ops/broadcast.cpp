// Ops that broadcast their inputs to a common shape: Expand, Tile, Where and
// the comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual); also
// Not, which flips their masks.
#include <limits>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

std::vector<int64_t> int_list_input(const InferContext& c, size_t index, const char* what) {
  const Tensor& t = c.constant(index);
  check(t.dtype() == DType::i64 && t.rank() == 1,
        std::string(what) + " must be int64 1-D, got " + t.desc().str());
  return t.to_int_vector();
}

// Expand: bidirectional broadcast of the input against the shape input.
std::vector<TensorDesc> infer_expand(const InferContext& c) {
  Shape target = int_list_input(c, 1, "shape");
  for (int64_t d : target) check(d >= 0, "negative extent in shape " + shape_str(target));
  TensorDesc out{c.inputs[0].dtype, broadcast_shapes(c.shape(0), target)};
  check_size(out);
  return {out};
}

// Tile: out[i] = in[i] * repeats[i].
std::vector<TensorDesc> infer_tile(const InferContext& c) {
  const Shape& in = c.shape(0);
  std::vector<int64_t> reps = int_list_input(c, 1, "repeats");
  check(reps.size() == in.size(), "repeats has " + std::to_string(reps.size()) + " entries for rank " +
                                      std::to_string(in.size()));
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    check(reps[i] >= 0, "negative repeat " + std::to_string(reps[i]));
    check(in[i] <= 0 || reps[i] <= std::numeric_limits<int64_t>::max() / in[i], "Tile output is too large");
    out[i] = in[i] < 0 ? -1 : in[i] * reps[i];
  }
  TensorDesc d{c.inputs[0].dtype, out};
  check_size(d);
  return {d};
}

std::vector<TensorDesc> infer_where(const InferContext& c) {
  check(c.inputs[0].dtype == DType::boolean, "condition must be bool, got " + c.inputs[0].str());
  check(c.inputs[1].dtype == c.inputs[2].dtype,
        "X and Y dtypes differ: " + c.inputs[1].str() + " vs " + c.inputs[2].str());
  Shape s = broadcast_shapes(broadcast_shapes(c.shape(0), c.shape(1)), c.shape(2));
  return {TensorDesc{c.inputs[1].dtype, s}};
}

std::vector<TensorDesc> infer_compare(const InferContext& c) {
  check(c.inputs[0].dtype == c.inputs[1].dtype,
        "operand dtypes differ: " + c.inputs[0].str() + " vs " + c.inputs[1].str());
  check(c.inputs[0].dtype != DType::boolean || c.op_type == "Equal",
        c.op_type + " does not take bool operands");
  return {TensorDesc{DType::boolean, broadcast_shapes(c.shape(0), c.shape(1))}};
}

// Not: elementwise on bool, here with the comparisons whose masks it flips.
std::vector<TensorDesc> infer_not(const InferContext& c) {
  check(c.inputs[0].dtype == DType::boolean, "Not takes bool, got " + c.inputs[0].str());
  return {c.inputs[0]};
}

}  // namespace

void register_broadcast_schemas() {
  register_schema({"Not", 1, 1, infer_not});
  register_schema({"Expand", 2, 2, infer_expand});
  register_schema({"Tile", 2, 2, infer_tile});
  register_schema({"Where", 3, 3, infer_where});
  for (const char* t : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    register_schema({t, 2, 2, infer_compare});
}

}  // namespace tandem::ops
