#include "formats/onnx/value_types.h"

#include <unordered_map>

#include "formats/onnx/tensor_proto.h"

namespace tandem {

namespace {

std::string type_kind(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "a sequence";
  if (t.has_map_type()) return "a map";
  if (t.has_optional_type()) return "an optional";
  if (t.has_sparse_tensor_type()) return "a sparse tensor";
  return "without a type";
}

}  // namespace

void apply_type(const onnx::TypeProto& type, Value& v, bool required) {
  if (!type.has_tensor_type()) {
    if (required)
      throw Error::unsupported("value '" + v.name + "' is " + type_kind(type) + "; only tensors are supported");
    return;
  }
  const auto& tt = type.tensor_type();
  auto dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype) {
    if (required)
      throw Error::unsupported("value '" + v.name + "' has unsupported element type " +
                               onnx_type_name(tt.elem_type()));
    return;
  }
  Shape shape;
  std::vector<std::string> names;
  bool any_name = false;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxDeclaredExtent) {
        check(!required, "value '" + v.name + "' has " + (d.dim_value() < 0 ? "negative" : "absurd") +
                             " extent " + std::to_string(d.dim_value()));
        return;
      }
      shape.push_back(d.dim_value());
      names.emplace_back();
    } else {
      shape.push_back(-1);
      names.push_back(d.has_dim_param() ? d.dim_param() : std::string());
      any_name |= !names.back().empty();
    }
  }
  v.dtype = *dtype;
  // A type without a shape says nothing about rank; keep what we had then.
  if (tt.has_shape()) {
    v.shape = std::move(shape);
    v.dim_names = any_name ? std::move(names) : std::vector<std::string>{};
  }
}

void apply_inferred_types(const onnx::GraphProto& inferred, Graph& g) {
  std::unordered_map<std::string, ValueId> by_name;
  for (size_t i = 0; i < g.values.size(); ++i) by_name.emplace(g.values[i].name, ValueId(i));
  auto apply = [&](const onnx::ValueInfoProto& info) {
    auto it = by_name.find(info.name());
    if (it == by_name.end()) return;
    Value& v = g.value(it->second);
    if (!v.is_constant() && v.producer >= 0) apply_type(info.type(), v, /*required=*/false);
  };
  for (const auto& info : inferred.value_info()) apply(info);
  for (const auto& info : inferred.output()) apply(info);
}

}  // namespace tandem
