#include "formats/onnx/attributes.h"

#include "formats/onnx/tensor_proto.h"

namespace tandem {

namespace {

using onnx::AttributeProto;

// Type of an attribute written before `type` was required (IR version < 2):
// the first field that is set decides.
AttributeProto::AttributeType guess_type(const AttributeProto& a) {
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.floats_size()) return AttributeProto::FLOATS;
  if (a.ints_size()) return AttributeProto::INTS;
  if (a.strings_size()) return AttributeProto::STRINGS;
  if (a.tensors_size()) return AttributeProto::TENSORS;
  if (a.graphs_size()) return AttributeProto::GRAPHS;
  return AttributeProto::UNDEFINED;
}

std::string type_name(AttributeProto::AttributeType t) {
  return AttributeProto::AttributeType_IsValid(t) ? AttributeProto::AttributeType_Name(t)
                                                  : "code " + std::to_string(int(t));
}

}  // namespace

AttrValue attribute_from_proto(const AttributeProto& a, const std::string& base_dir) {
  auto type = a.has_type() && a.type() != AttributeProto::UNDEFINED ? a.type() : guess_type(a);
  switch (type) {
    case AttributeProto::INT: return int64_t(a.i());
    case AttributeProto::FLOAT: return a.f();
    case AttributeProto::STRING: return a.s();
    case AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case AttributeProto::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case AttributeProto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case AttributeProto::TENSOR:
      try {
        return tensor_from_proto(a.t(), base_dir);
      } catch (const Error& e) {
        throw Error("attribute '" + a.name() + "': " + e.message(), e.context());
      }
    default:
      throw Error("attribute '" + a.name() + "' of type " + type_name(type) +
                  " is not supported");
  }
}

Attributes attributes_from_node(const onnx::NodeProto& node, const std::string& base_dir) {
  Attributes attrs;
  for (const AttributeProto& a : node.attribute()) {
    if (!a.ref_attr_name().empty())
      throw Error("attribute '" + a.name() + "' refers to a function attribute; "
                  "functions are not supported");
    if (attrs.has(a.name())) throw Error("attribute '" + a.name() + "' appears twice");
    attrs.set(a.name(), attribute_from_proto(a, base_dir));
  }
  return attrs;
}

}  // namespace tandem
