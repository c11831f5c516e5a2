// GELU written out as elementwise nodes becomes one Gelu node. PyTorch
// before opset 20 exports nn.GELU() as
//   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)      (torch.onnx)
// and others write 0.5 first:
//   Mul(Mul(x, 0.5), Add(Erf(Div(x, sqrt 2)), 1))
// (Div by sqrt 2 or Mul by 1/sqrt 2; either operand order of Add and Mul).
// Five passes over the activation become one, and the Erf (a libm loop on
// the CPU) goes. Only chains whose intermediates nobody else reads fuse.
#include <cmath>

#include "graph/passes.h"
#include "graph/rewrite_utils.h"

namespace tandem {

namespace {

using Consumers = std::vector<std::vector<NodeId>>;

bool near(float v, double want) { return std::fabs(double(v) - want) <= 1e-6 * want; }

// Binary node `n` of type `op` reading `x` and a one-element constant near
// `want` (the divisor, for Div).
bool is_scalar_op(const Graph& g, const Node& n, const char* op, double want, ValueId x) {
  if (n.dead || n.op_type != op || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  float c;
  for (int k = 0; k < 2; ++k)
    if (n.inputs[size_t(1 - k)] == x && scalar_f32(g, n.inputs[size_t(k)], &c) && near(c, want))
      return k == 1 || n.op_type != "Div";
  return false;
}

// Add(Erf(x / sqrt 2), 1) starting at the scaling node `scale`: appends
// scale, Erf and Add to `chain` and returns the Add's output, else kNoValue.
// The Erf and the Add are the sole readers of their inputs.
ValueId erf_branch(const Graph& g, const Consumers& cons, NodeId scale, ValueId x, std::vector<NodeId>* chain) {
  const Node& s = g.nodes[size_t(scale)];
  if (!is_scalar_op(g, s, "Div", std::sqrt(2.0), x) && !is_scalar_op(g, s, "Mul", std::sqrt(0.5), x))
    return kNoValue;
  NodeId erf = sole_consumer(g, cons, s.outputs[0]);
  if (erf < 0 || g.nodes[size_t(erf)].op_type != "Erf") return kNoValue;
  ValueId e = g.nodes[size_t(erf)].outputs[0];
  NodeId add = sole_consumer(g, cons, e);
  if (add < 0 || !is_scalar_op(g, g.nodes[size_t(add)], "Add", 1.0, e)) return kNoValue;
  *chain = {scale, erf, add};
  return g.nodes[size_t(add)].outputs[0];
}

// Mul(a, b) with operands {a, b} in either order.
bool is_product_of(const Node& n, ValueId a, ValueId b) {
  if (n.dead || n.op_type != "Mul" || n.inputs.size() != 2) return false;
  return (n.inputs[0] == a && n.inputs[1] == b) || (n.inputs[0] == b && n.inputs[1] == a);
}

// True when x's two readers `scale` and `other` start a GELU chain; `chain`
// receives its nodes, the last one (which makes the result) last.
bool match_gelu(const Graph& g, const Consumers& cons, ValueId x, NodeId scale, NodeId other,
                std::vector<NodeId>* chain) {
  ValueId one_plus = erf_branch(g, cons, scale, x, chain);
  if (one_plus == kNoValue) return false;
  const Node& o = g.nodes[size_t(other)];
  if (o.op_type != "Mul" || o.outputs.size() != 1) return false;
  NodeId next = sole_consumer(g, cons, o.outputs[0]);
  if (next < 0) return false;
  const Node& n = g.nodes[size_t(next)];
  bool half_last = is_product_of(o, x, one_plus) && sole_consumer(g, cons, one_plus) == other &&
                   is_scalar_op(g, n, "Mul", 0.5, o.outputs[0]);
  bool half_first = is_scalar_op(g, o, "Mul", 0.5, x) && is_product_of(n, o.outputs[0], one_plus) &&
                    sole_consumer(g, cons, one_plus) == next;
  // A rank-raising scalar ([1,1,1] against a 2-D x) would change the shape.
  if ((!half_last && !half_first) || g.value(n.outputs[0]).shape != g.value(x).shape) return false;
  chain->push_back(other);
  chain->push_back(next);
  return true;
}

}  // namespace

int fuse_gelu(Graph& g) {
  int fused = 0;
  Consumers cons = g.consumers();
  for (size_t v = 0; v < g.values.size(); ++v) {
    std::vector<NodeId> r;
    for (NodeId n : cons[v])
      if (!g.nodes[size_t(n)].dead && (r.empty() || r.back() != n)) r.push_back(n);
    if (r.size() != 2 || g.values[v].dtype != DType::f32) continue;
    for (int k = 0; k < 2; ++k) {
      std::vector<NodeId> chain;
      if (!match_gelu(g, cons, ValueId(v), r[size_t(k)], r[size_t(1 - k)], &chain)) continue;
      for (NodeId n : chain) g.nodes[size_t(n)].dead = true;
      Node& gelu = g.nodes[size_t(chain.back())];  // the last node's place: after x is made
      gelu.dead = false;
      gelu.op_type = "Gelu";
      gelu.domain.clear();
      gelu.inputs = {ValueId(v)};
      gelu.attrs = Attributes();
      gelu.attrs.set("approximate", std::string("none"));
      ++fused;
      break;
    }
  }
  g.compact();
  return fused;
}

}  // namespace tandem
