#include "graph/quantize_graph.h"

#include <algorithm>
#include <cmath>

#include "graph/rewrite_utils.h"

namespace tandem {

std::vector<QuantizableConv> quantizable_convs(const Graph& g) {
  std::vector<QuantizableConv> r;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead || n.op_type != "Conv" || n.inputs.size() < 2) continue;
    const Tensor* w = constant_f32(g, n.inputs[1]);
    if (!w || w->rank() < 3 || g.value(n.inputs[0]).dtype != DType::f32) continue;
    r.push_back({NodeId(i), n.inputs[0]});
  }
  return r;
}

namespace {

Node make_node(const std::string& op, const std::string& name, std::vector<ValueId> in,
               ValueId out) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = {out};
  return n;
}

// x -> QuantizeLinear -> DequantizeLinear (u8 or s8, per tensor); the
// dequantized value.
ValueId add_fake_quantize(Graph& g, ValueId x, const QuantizationParams& q) {
  const Value xv = g.value(x);
  const ValueId s = g.add_constant(xv.name + "_scale", Tensor::from_vector<float>({q.scale}, {}));
  const ValueId z = g.add_constant(xv.name + "_zero_point",
                                   q.dtype == DType::i8
                                       ? Tensor::from_vector<int8_t>({int8_t(q.zero_point)}, {})
                                       : Tensor::from_vector<uint8_t>({uint8_t(q.zero_point)}, {}));
  Value qv = xv, dv = xv;
  qv.name = xv.name + "_quantized";
  qv.dtype = q.dtype;
  qv.constant.reset();
  dv.name = xv.name + "_dequantized";
  dv.constant.reset();
  const ValueId qid = g.add_value(qv), did = g.add_value(dv);
  g.add_node(make_node("QuantizeLinear", xv.name + "_quantize", {x, s, z}, qid));
  g.add_node(make_node("DequantizeLinear", xv.name + "_dequantize", {qid, s, z}, did));
  return did;
}

// W [M, ...] f32 -> DequantizeLinear(i8 W, one scale per m, axis 0).
ValueId add_integer_weights(Graph& g, ValueId w, const IntegerWeights* given) {
  // Copies, not references: adding values below may move the graph's values.
  const std::string name = g.value(w).name;
  IntegerWeights q = given ? *given : round_to_nearest(*g.value(w).constant);
  const int64_t m = q.values.dim(0);
  const ValueId qv = g.add_constant(name + "_int8", std::move(q.values));
  const ValueId sv =
      g.add_constant(name + "_int8_scale", Tensor::from_vector<float>(q.scales, {m}));
  Value dv = g.value(w);
  dv.name = name + "_dequantized";
  dv.constant.reset();
  const ValueId did = g.add_value(dv);
  Node n = make_node("DequantizeLinear", name + "_dequantize", {qv, sv}, did);
  n.attrs.set("axis", int64_t(0));
  g.add_node(std::move(n));
  return did;
}

}  // namespace

void insert_qdq(Graph& g, const std::vector<QuantizableConv>& convs,
                const std::map<ValueId, QuantizationParams>& activations,
                const std::map<NodeId, IntegerWeights>& weights) {
  const auto cons = g.consumers();
  std::vector<char> quantized(g.nodes.size(), 0);
  for (const QuantizableConv& c : convs) quantized[size_t(c.node)] = 1;
  for (const auto& [x, q] : activations) {
    const ValueId d = add_fake_quantize(g, x, q);
    for (NodeId r : cons[size_t(x)]) {
      Node& n = g.nodes[size_t(r)];
      if (!quantized[size_t(r)] && n.op_type != "Add") continue;
      for (ValueId& in : n.inputs)
        if (in == x) in = d;
    }
  }
  for (const QuantizableConv& c : convs) {
    const ValueId w = g.nodes[size_t(c.node)].inputs[1];
    const auto given = weights.find(c.node);
    const ValueId d = add_integer_weights(g, w, given == weights.end() ? nullptr : &given->second);
    g.nodes[size_t(c.node)].inputs[1] = d;
  }
  g.topo_sort();
}

}  // namespace tandem
