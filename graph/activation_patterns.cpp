#include "graph/activation_patterns.h"

#include <algorithm>
#include <cmath>

#include "graph/rewrite_utils.h"

namespace tandem {

namespace {

using Consumers = std::vector<std::vector<NodeId>>;

// Binary node `n` with one operand a scalar constant: the other operand.
ValueId other_than_scalar(const Graph& g, const Node& n, float* scalar) {
  if (n.inputs.size() != 2) return kNoValue;
  if (scalar_f32(g, n.inputs[1], scalar)) return n.inputs[0];
  if (scalar_f32(g, n.inputs[0], scalar)) return n.inputs[1];
  return kNoValue;
}

bool is_clip(const Graph& g, const Node& n, float lo, float hi) {
  if (n.dead || n.op_type != "Clip" || n.inputs.size() != 3) return false;
  float a, b;
  return scalar_f32(g, n.inputs[1], &a) && scalar_f32(g, n.inputs[2], &b) && a == lo && b == hi;
}

const Node* node_at(const Graph& g, NodeId id) { return id < 0 ? nullptr : &g.nodes[size_t(id)]; }

// Add(y, 3) read only by Clip(0, 6): returns the Clip node, else -1.
NodeId relu6_after_add3(const Graph& g, const Consumers& cons, NodeId add, ValueId y) {
  const Node* a = node_at(g, add);
  float three;
  if (!a || a->dead || a->op_type != "Add" || other_than_scalar(g, *a, &three) != y || three != 3.f) return -1;
  NodeId clip = sole_consumer(g, cons, a->outputs[0]);
  return clip >= 0 && is_clip(g, g.nodes[size_t(clip)], 0.f, 6.f) ? clip : -1;
}

// The live readers of y.
std::vector<NodeId> readers(const Graph& g, const Consumers& cons, ValueId y) {
  std::vector<NodeId> r;
  for (NodeId n : cons[size_t(y)])
    if (!g.nodes[size_t(n)].dead && (r.empty() || r.back() != n)) r.push_back(n);
  return r;
}

bool match_hard_sigmoid(const Graph& g, const Consumers& cons, ValueId y, ActivationTail* t) {
  std::vector<NodeId> r = readers(g, cons, y);
  if (r.size() != 1 || is_graph_output(g, y)) return false;
  NodeId clip = relu6_after_add3(g, cons, r[0], y);
  if (clip < 0) return false;
  NodeId mul = sole_consumer(g, cons, g.nodes[size_t(clip)].outputs[0]);
  const Node* m = node_at(g, mul);
  float c;
  if (!m || m->op_type != "Mul" || other_than_scalar(g, *m, &c) != g.nodes[size_t(clip)].outputs[0] || !(c > 0))
    return false;
  *t = {"HardSigmoid", {c, 3.f * c, 6.f * c}, m->outputs[0], {r[0], clip, mul}};
  return true;
}

bool match_hard_swish(const Graph& g, const Consumers& cons, ValueId y, ActivationTail* t) {
  std::vector<NodeId> r = readers(g, cons, y);
  if (r.size() != 2 || is_graph_output(g, y)) return false;
  for (int k = 0; k < 2; ++k) {
    NodeId scale = r[size_t(k)], add = r[size_t(1 - k)];
    const Node* s = node_at(g, scale);
    float c;
    if (s->op_type != "Mul" || other_than_scalar(g, *s, &c) != y || !(c > 0)) continue;
    NodeId clip = relu6_after_add3(g, cons, add, y);
    if (clip < 0) continue;
    ValueId scaled = s->outputs[0], relu6 = g.nodes[size_t(clip)].outputs[0];
    NodeId mul = sole_consumer(g, cons, scaled);
    const Node* m = node_at(g, mul);
    if (!m || m->op_type != "Mul" || sole_consumer(g, cons, relu6) != mul) continue;
    *t = {"HardSwish", {6.f * c}, m->outputs[0], {scale, add, clip, mul}};
    return true;
  }
  return false;
}

// y -> [Relu] -> Min(hi) -> Max(lo), or Max then Min: TensorFlow's
// clip_by_value (Keras' ReLU(max_value=6) in FaceRes writes Relu, Minimum,
// Maximum after each of its 27 convolutions). Either order clamps to
// [lo, hi] when lo <= hi, and after the Relu to [max(lo, 0), hi].
bool match_clip_by_value(const Graph& g, const Consumers& cons, ValueId y, ActivationTail* t) {
  std::vector<NodeId> nodes;
  ValueId at = y;
  float lo = -INFINITY, hi = INFINITY;
  bool relu = false, have_min = false, have_max = false;
  for (int step = 0; step < 3; ++step) {
    if (is_graph_output(g, at)) break;
    const NodeId next = sole_consumer(g, cons, at);
    const Node* n = node_at(g, next);
    if (!n || n->dead) break;
    float c;
    if (step == 0 && n->op_type == "Relu") {
      relu = true;
    } else if (n->op_type == "Min" && !have_min && other_than_scalar(g, *n, &c) == at) {
      have_min = true, hi = c;
    } else if (n->op_type == "Max" && !have_max && other_than_scalar(g, *n, &c) == at) {
      have_max = true, lo = c;
    } else {
      break;
    }
    nodes.push_back(next);
    at = n->outputs[0];
  }
  if (!have_min || !have_max) return false;
  if (relu) lo = std::max(lo, 0.f);
  if (!(lo <= hi)) return false;
  *t = {"Clip", {lo, hi}, at, nodes};
  return true;
}

}  // namespace

bool match_activation_tail(const Graph& g, const Consumers& cons, ValueId y, ActivationTail* tail) {
  return match_hard_swish(g, cons, y, tail) || match_hard_sigmoid(g, cons, y, tail) ||
         match_clip_by_value(g, cons, y, tail);
}

}  // namespace tandem
