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

namespace tandem {

namespace {

// The scale and zero point inputs of a Quantize/DequantizeLinear node n,
// read from constants; `integer` and `dtype` are the caller's to set.
std::optional<LinearQuantization> linear_params(const Graph& g, NodeId id) {
  const Node& n = g.nodes[size_t(id)];
  if (n.dead || n.inputs.size() < 2) return std::nullopt;
  const Tensor* s = constant_f32(g, n.inputs[1]);
  if (!s || s->rank() > 1 || s->numel() < 1) return std::nullopt;
  LinearQuantization q;
  q.node = id;
  q.scales.assign(s->data<float>(), s->data<float>() + s->numel());
  q.axis = n.attrs.get_int("axis", 1);
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    const Value& z = g.value(n.inputs[2]);
    if (!z.constant || z.constant->numel() != s->numel()) return std::nullopt;
    for (int64_t i = 0; i < z.constant->numel(); ++i) q.zero_points.push_back(int64_t(z.constant->scalar_at(i)));
  } else {
    q.zero_points.assign(q.scales.size(), 0);
  }
  return q;
}

}  // namespace

std::optional<LinearQuantization> dequantize_of(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  NodeId p = g.value(v).producer;
  if (p < 0 || g.nodes[size_t(p)].op_type != "DequantizeLinear") return std::nullopt;
  auto q = linear_params(g, p);
  if (!q) return std::nullopt;
  q->integer = g.nodes[size_t(p)].inputs[0];
  q->dtype = g.value(q->integer).dtype;
  return q;
}

std::optional<LinearQuantization> quantize_params(const Graph& g, NodeId n) {
  if (g.nodes[size_t(n)].op_type != "QuantizeLinear") return std::nullopt;
  auto q = linear_params(g, n);
  if (!q) return std::nullopt;
  q->integer = g.nodes[size_t(n)].outputs[0];
  q->dtype = g.value(q->integer).dtype;
  return q;
}

}  // namespace tandem
