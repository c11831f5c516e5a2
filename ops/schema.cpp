#include "ops/schema.h"

#include <map>
#include <mutex>

#include "ops/all_ops.h"

namespace tandem::ops {

namespace {
std::map<std::string, OpSchema>& table() {
  static std::map<std::string, OpSchema> t;
  return t;
}
std::map<std::string, std::vector<int>>& value_input_table() {
  static std::map<std::string, std::vector<int>> t;
  return t;
}
void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] { register_all_schemas(); });
}
}  // namespace

const Attributes& InferContext::attributes() const {
  static const Attributes kEmpty;
  return attrs ? *attrs : kEmpty;
}

const Tensor& InferContext::constant(size_t i) const {
  if (i >= constants.size() || !constants[i])
    throw Error::unsupported("input " + std::to_string(i) + " must be a constant (computed shapes are not supported here)",
                context());
  return *constants[i];
}

void register_schema(OpSchema schema) { table()[schema.type] = std::move(schema); }

const OpSchema* find_schema(const std::string& op_type) {
  ensure_registered();
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  ensure_registered();
  std::vector<std::string> names;
  for (auto& [k, v] : table()) names.push_back(k);
  return names;
}

void register_value_inputs(const std::string& op_type, std::vector<int> inputs) {
  value_input_table()[op_type] = std::move(inputs);
}

const std::vector<int>& value_inputs(const std::string& op_type) {
  static const std::vector<int> kNone;
  ensure_registered();
  auto it = value_input_table().find(op_type);
  return it == value_input_table().end() ? kNone : it->second;
}

std::vector<TensorDesc> infer_outputs(const InferContext& ctx) {
  const OpSchema* s = find_schema(ctx.op_type);
  if (!s) throw Error::unsupported("unsupported op", ctx.context());
  int n = int(ctx.inputs.size());
  if (n < s->min_inputs || n > s->max_inputs)
    throw Error("takes " + std::to_string(s->min_inputs) + ".." + std::to_string(s->max_inputs) +
                    " inputs, got " + std::to_string(n),
                ctx.context());
  for (int i = 0; i < s->min_inputs; ++i)
    if (!ctx.has_input(size_t(i)))
      throw Error("required input " + std::to_string(i) + " is missing", ctx.context());
  try {
    return s->infer(ctx);
  } catch (const Error& e) {
    throw e.with_context(ctx.context());
  }
}

}  // namespace tandem::ops
