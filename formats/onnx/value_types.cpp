#include "formats/onnx/value_types.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <onnx/shape_inference/implementation.h>

#include "formats/onnx/tensor_proto.h"

namespace tandem {

namespace {

std::string type_kind(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "a sequence";
  if (t.has_map_type()) return "a map";
  if (t.has_optional_type()) return "an optional";
  if (t.has_sparse_tensor_type()) return "a sparse tensor";
  return "untyped";
}

// ONNX's inference walks nodes in file order and stops at a domain without
// an opset import; give it nodes in dependency order and an import (version
// 1) for every custom domain so that it gets as far as it can.
void prepare_for_inference(onnx::ModelProto& model) {
  std::unordered_set<std::string> domains;
  for (const auto& o : model.opset_import()) domains.insert(o.domain());
  auto* nodes = model.mutable_graph()->mutable_node();
  for (const auto& n : *nodes)
    if (!domains.count(n.domain()) && n.domain() != "ai.onnx") {
      domains.insert(n.domain());
      auto* o = model.add_opset_import();
      o->set_domain(n.domain());
      o->set_version(1);
    }
  // Kahn's algorithm over names; nodes left unplaced (cycles, undefined
  // inputs) keep their relative order at the end.
  std::unordered_set<std::string> ready;
  for (const auto& v : model.graph().input()) ready.insert(v.name());
  for (const auto& t : model.graph().initializer()) ready.insert(t.name());
  ready.insert("");
  std::vector<onnx::NodeProto*> pending;
  while (!nodes->empty()) pending.push_back(nodes->ReleaseLast());
  std::reverse(pending.begin(), pending.end());
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& n : pending) {
      if (!n || !std::all_of(n->input().begin(), n->input().end(),
                             [&](const std::string& in) { return ready.count(in) != 0; }))
        continue;
      for (const auto& out : n->output()) ready.insert(out);
      nodes->AddAllocated(std::exchange(n, nullptr));
      progress = true;
    }
  }
  for (auto* n : pending)
    if (n) nodes->AddAllocated(n);
}

}  // namespace

void apply_type(const onnx::TypeProto& type, Value& v, bool required) {
  if (!type.has_tensor_type()) {
    check(!required, "value '" + v.name + "' is " + type_kind(type) + "; only tensors are supported");
    return;
  }
  const auto& tt = type.tensor_type();
  auto dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype) {
    check(!required, "value '" + v.name + "' has unsupported element type " +
                         onnx_type_name(tt.elem_type()));
    return;
  }
  Shape shape;
  std::vector<std::string> names;
  bool any_name = false;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        check(!required, "value '" + v.name + "' has negative extent " +
                             std::to_string(d.dim_value()));
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

bool infer_value_types(onnx::ModelProto& model, Graph& g) {
  try {
    prepare_for_inference(model);
    // error_mode 0: a node whose inference fails is skipped, not fatal.
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/false);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    return false;  // inference is advisory; the executor infers shapes itself
  }
  std::unordered_map<std::string, ValueId> by_name;
  for (size_t i = 0; i < g.values.size(); ++i) by_name.emplace(g.values[i].name, ValueId(i));
  auto apply = [&](const onnx::ValueInfoProto& info) {
    auto it = by_name.find(info.name());
    if (it == by_name.end()) return;
    ValueId id = it->second;
    if (g.value(id).is_constant() || g.value(id).producer < 0) return;
    apply_type(info.type(), g.value(id), /*required=*/false);
  };
  for (const auto& info : model.graph().value_info()) apply(info);
  for (const auto& info : model.graph().output()) apply(info);
  return true;
}

}  // namespace tandem
