// MobileNetV3's hard activations as TensorFlow graphs spell them out,
//   hard_sigmoid(x) = relu6(x + 3) * (1/6)
//   hard_swish(x)   = (x * (1/6)) * relu6(x + 3)
// (Relu6 imported as Clip(0, 6)), become one HardSigmoid / HardSwish node,
// which the conv epilogue then absorbs: four passes over memory become none.
#include <cmath>

#include "graph/passes.h"
#include "graph/rewrite_utils.h"

namespace tandem {

namespace {

using Consumers = std::vector<std::vector<NodeId>>;

bool near(float a, float b) { return std::fabs(a - b) <= 1e-6f * std::max(1.f, std::fabs(b)); }

// Binary node `n` with one operand a scalar constant: the other operand.
ValueId other_than_scalar(const Graph& g, const Node& n, float* scalar) {
  if (n.inputs.size() != 2) return kNoValue;
  if (scalar_f32(g, n.inputs[1], scalar)) return n.inputs[0];
  if (scalar_f32(g, n.inputs[0], scalar)) return n.inputs[1];
  return kNoValue;
}

bool clip_bounds(const Graph& g, const Node& n, float lo, float hi) {
  if (n.op_type != "Clip" || n.inputs.size() != 3) return false;
  float a, b;
  return scalar_f32(g, n.inputs[1], &a) && scalar_f32(g, n.inputs[2], &b) && a == lo && b == hi;
}

// `v` = Clip(Add(x, 3), 0, 6), each read once: returns x and the two nodes.
ValueId relu6_of_x_plus_3(const Graph& g, const Consumers& cons, ValueId v, NodeId* clip, NodeId* add) {
  const Value& val = g.value(v);
  if (val.producer < 0 || sole_consumer(g, cons, v) < 0) return kNoValue;
  const Node& c = g.nodes[size_t(val.producer)];
  if (c.dead || !clip_bounds(g, c, 0.f, 6.f)) return kNoValue;
  const Value& a = g.value(c.inputs[0]);
  if (a.producer < 0 || sole_consumer(g, cons, c.inputs[0]) < 0) return kNoValue;
  const Node& an = g.nodes[size_t(a.producer)];
  float three;
  if (an.dead || an.op_type != "Add") return kNoValue;
  ValueId x = other_than_scalar(g, an, &three);
  if (x == kNoValue || !near(three, 3.f)) return kNoValue;
  *clip = val.producer;
  *add = a.producer;
  return x;
}

void make_activation(Node& n, const std::string& op, ValueId x) {
  n.op_type = op;
  n.inputs = {x};
  n.attrs = Attributes();
}

// Mul(c, relu6(x + 3)) with c = 1/6 (or any c: alpha = c, beta = 3c).
bool fuse_hard_sigmoid(Graph& g, const Consumers& cons, Node& mul) {
  float c;
  ValueId r = other_than_scalar(g, mul, &c);
  if (r == kNoValue) return false;
  NodeId clip, add;
  ValueId x = relu6_of_x_plus_3(g, cons, r, &clip, &add);
  if (x == kNoValue) return false;
  g.nodes[size_t(clip)].dead = g.nodes[size_t(add)].dead = true;
  make_activation(mul, "HardSigmoid", x);
  mul.attrs.set("alpha", c);
  mul.attrs.set("beta", 3.f * c);
  return true;
}

// Mul(Mul(x, 1/6), relu6(x + 3)), either operand order at both Muls.
bool fuse_hard_swish(Graph& g, const Consumers& cons, Node& mul) {
  if (mul.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    ValueId scaled = mul.inputs[size_t(side)], r = mul.inputs[size_t(1 - side)];
    const Value& sv = g.value(scaled);
    if (sv.producer < 0 || sole_consumer(g, cons, scaled) < 0) continue;
    Node& inner = g.nodes[size_t(sv.producer)];
    float c;
    if (inner.dead || inner.op_type != "Mul") continue;
    ValueId x = other_than_scalar(g, inner, &c);
    if (x == kNoValue || !near(c, 1.f / 6.f)) continue;
    NodeId clip, add;
    if (relu6_of_x_plus_3(g, cons, r, &clip, &add) != x) continue;
    inner.dead = g.nodes[size_t(clip)].dead = g.nodes[size_t(add)].dead = true;
    make_activation(mul, "HardSwish", x);
    return true;
  }
  return false;
}

}  // namespace

int fuse_hard_activations(Graph& g) {
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead || g.nodes[i].op_type != "Mul") continue;
    Consumers cons = g.consumers();
    if (fuse_hard_swish(g, cons, g.nodes[i]) || fuse_hard_sigmoid(g, cons, g.nodes[i])) ++fused;
  }
  g.compact();
  return fused;
}

}  // namespace tandem
