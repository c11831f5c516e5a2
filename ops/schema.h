#pragma once
// Op semantics shared by every backend: how many inputs an op takes and the
// dtype/shape of its outputs. One file per op family (conv.cpp, pool.cpp, ...),
// each registering its schemas; backends reuse the attribute parsers declared
// in the family's header (ops/conv.h, ...).
#include <string>
#include <vector>

#include "core/attributes.h"
#include "core/tensor.h"

namespace tandem::ops {

struct InferContext {
  std::string op_type;
  std::string node;
  const Attributes* attrs = nullptr;
  int opset = 17;
  std::vector<TensorDesc> inputs;       // dtype + shape (layout ignored)
  std::vector<bool> present;            // false for an omitted optional input
  std::vector<const Tensor*> constants; // value when the input is constant
  int num_outputs = 1;                  // outputs the node declares

  const Attributes& attributes() const;
  bool has_input(size_t i) const { return i < inputs.size() && present[i]; }
  const Shape& shape(size_t i) const { return inputs.at(i).shape; }
  // Constant value of input i; throws Error naming the node if it is not one
  // (e.g. Reshape with a computed shape that folding could not resolve).
  const Tensor& constant(size_t i) const;
  ErrorContext context() const { return {"", node, op_type, ""}; }
};

// Where a training entry's shape rule failed: the entry's name and the shape.
inline ErrorContext shape_context(const char* op, const Shape& s) { return {"", "", op, shape_str(s)}; }

using InferFn = std::vector<TensorDesc> (*)(const InferContext&);

struct OpSchema {
  std::string type;
  int min_inputs = 1;
  int max_inputs = 1;
  InferFn infer = nullptr;
};

// Registers a schema; later registrations of the same type replace earlier ones.
void register_schema(OpSchema schema);
// nullptr when the op is unknown.
const OpSchema* find_schema(const std::string& op_type);
// Runs the schema's checks and inference; errors carry the node context.
std::vector<TensorDesc> infer_outputs(const InferContext& ctx);
std::vector<std::string> registered_ops();

// Float inputs of an op whose values set its output shape (Resize's roi and
// scales). A session treats small ones fed at run time as constants, as it
// does every small integer input, so that the shape can be inferred.
void register_value_inputs(const std::string& op_type, std::vector<int> inputs);
// Empty for ops without such inputs.
const std::vector<int>& value_inputs(const std::string& op_type);

}  // namespace tandem::ops
