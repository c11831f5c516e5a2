#include "graph/rewrite_utils.h"

namespace tandem {

bool is_graph_output(const Graph& g, ValueId v) {
  for (ValueId o : g.outputs)
    if (o == v) return true;
  return false;
}

NodeId sole_consumer(const Graph& g, const std::vector<std::vector<NodeId>>& cons, ValueId v) {
  if (is_graph_output(g, v)) return -1;
  NodeId only = -1;
  for (NodeId n : cons[size_t(v)]) {
    if (g.nodes[size_t(n)].dead) continue;
    if (only >= 0 && only != n) return -1;
    only = n;
  }
  return only;
}

const Tensor* constant_f32(const Graph& g, ValueId v) {
  if (v == kNoValue) return nullptr;
  const Value& val = g.value(v);
  if (!val.constant || val.constant->dtype() != DType::f32) return nullptr;
  return &*val.constant;
}

bool scalar_f32(const Graph& g, ValueId v, float* out) {
  const Tensor* t = constant_f32(g, v);
  if (!t || t->numel() != 1) return false;
  *out = t->data<float>()[0];
  return true;
}

ops::InferContext infer_context_of(const Graph& g, const Node& n) {
  ops::InferContext ic;
  ic.op_type = n.op_type;
  ic.node = n.name;
  ic.attrs = &n.attrs;
  ic.opset = g.opset;
  ic.num_outputs = int(n.outputs.size());
  for (ValueId v : n.inputs) {
    bool present = v != kNoValue;
    const Value* val = present ? &g.value(v) : nullptr;
    ic.inputs.push_back(present ? TensorDesc{val->dtype, val->shape} : TensorDesc{});
    ic.present.push_back(present);
    ic.constants.push_back(present && val->constant ? &*val->constant : nullptr);
  }
  return ic;
}

}  // namespace tandem
