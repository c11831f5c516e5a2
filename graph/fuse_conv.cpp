// Conv-centred rewrites: BatchNorm folding and epilogue fusion. Both only
// fire when the intermediate value has a single reader and is not a graph
// output, so no one can observe the value that disappears.
#include <cmath>

#include "graph/activation_patterns.h"
#include "graph/passes.h"
#include "graph/rewrite_utils.h"

namespace tandem {

namespace {

// Per output channel m: s = scale / sqrt(var + eps), B' = (B - mean) * s +
// beta. Empty when the BatchNormalization's parameters are not constants
// of M values.
std::vector<double> batchnorm_factors(const Graph& g, const Node& bn, int64_t m) {
  if (bn.inputs.size() < 5 || bn.outputs.size() != 1) return {};
  const Tensor *scale = constant_f32(g, bn.inputs[1]), *var = constant_f32(g, bn.inputs[4]);
  for (ValueId v : {bn.inputs[1], bn.inputs[2], bn.inputs[3], bn.inputs[4]}) {
    const Tensor* t = constant_f32(g, v);
    if (!t || t->numel() != m) return {};
  }
  const float eps = bn.attrs.get_float("epsilon", 1e-5f);
  std::vector<double> s(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) s[size_t(o)] = scale->data<float>()[o] / std::sqrt(double(var->data<float>()[o]) + eps);
  return s;
}

Tensor folded_bias(const Graph& g, const Node& bn, const Tensor* b, const std::vector<double>& s) {
  const Tensor *beta = constant_f32(g, bn.inputs[2]), *mean = constant_f32(g, bn.inputs[3]);
  Tensor nb = Tensor::empty(DType::f32, {int64_t(s.size())});
  for (size_t o = 0; o < s.size(); ++o) {
    const double bias = b ? b->data<float>()[o] : 0.0;
    nb.data<float>()[o] = float((bias - mean->data<float>()[o]) * s[o] + beta->data<float>()[o]);
  }
  return nb;
}

// W' = W * s for float weights, a constant named after the conv and `what`
// (names must stay unique: a batch norm and a later Mul may both scale).
bool scale_float_weights(Graph& g, Node& conv, const std::vector<double>& s,
                         const std::string& what) {
  const Tensor* w = constant_f32(g, conv.inputs[1]);
  if (!w || w->rank() < 3 || w->dim(0) != int64_t(s.size())) return false;
  Tensor nw = w->clone();
  const int64_t per = w->numel() / w->dim(0);
  for (size_t o = 0; o < s.size(); ++o) {
    float* row = nw.data<float>() + int64_t(o) * per;
    for (int64_t k = 0; k < per; ++k) row[k] = float(row[k] * s[o]);
  }
  conv.inputs[1] = g.add_constant(conv.name + "_W_" + what, std::move(nw));
  return true;
}

// Dequantized i8 weights (a QAT export's): the factor goes into each
// channel's scale, the integers stay; a negative factor negates the
// channel's integers (not possible for one holding -128). The
// DequantizeLinear is rewritten in place, so only when this conv alone
// reads it.
bool scale_integer_weights(Graph& g, const std::vector<std::vector<NodeId>>& cons, Node& conv,
                           const std::vector<double>& s) {
  auto q = dequantize_of(g, conv.inputs[1]);
  if (!q || q->dtype != DType::i8 || !g.value(q->integer).is_constant()) return false;
  const NodeId dq = g.value(conv.inputs[1]).producer;
  const int64_t m = int64_t(s.size());
  if (sole_consumer(g, cons, conv.inputs[1]) < 0 || (!q->per_tensor() && (q->axis != 0 || int64_t(q->scales.size()) != m)))
    return false;
  for (int64_t z : q->zero_points)
    if (z != 0) return false;
  Tensor ints = g.value(q->integer).constant->clone();
  if (ints.rank() < 1 || ints.dim(0) != m) return false;
  const int64_t per = ints.numel() / m;
  std::vector<float> scales(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    int8_t* row = ints.data<int8_t>() + o * per;
    if (s[size_t(o)] < 0) {
      for (int64_t k = 0; k < per; ++k)
        if (row[k] == -128) return false;
      for (int64_t k = 0; k < per; ++k) row[k] = int8_t(-row[k]);
    }
    scales[size_t(o)] = float(q->scales[q->per_tensor() ? 0 : size_t(o)] * std::fabs(s[size_t(o)]));
  }
  Node& d = g.nodes[size_t(dq)];
  const ValueId iv = g.add_constant(conv.name + "_W_int8_bnfolded", std::move(ints));
  const ValueId sv = g.add_constant(conv.name + "_W_scale_bnfolded", Tensor::from_vector<float>(scales, {m}));
  d.inputs = {iv, sv};
  d.attrs.set("axis", int64_t(0));
  return true;
}

bool fold_one_batchnorm(Graph& g, const std::vector<std::vector<NodeId>>& cons, Node& conv, Node& bn) {
  const Tensor* b = conv.inputs.size() > 2 ? constant_f32(g, conv.inputs[2]) : nullptr;
  if (conv.inputs.size() > 2 && conv.inputs[2] != kNoValue && !b) return false;
  const Shape& ws = g.value(conv.inputs[1]).shape;
  if (ws.size() < 3 || ws[0] <= 0) return false;
  const std::vector<double> s = batchnorm_factors(g, bn, ws[0]);
  if (s.empty() || (b && b->numel() != ws[0])) return false;
  Tensor nb = folded_bias(g, bn, b, s);
  if (!scale_float_weights(g, conv, s, "bnfolded") && !scale_integer_weights(g, cons, conv, s))
    return false;
  conv.inputs.resize(3);
  conv.inputs[2] = g.add_constant(conv.name + "_B_bnfolded", std::move(nb));
  conv.outputs[0] = bn.outputs[0];
  bn.dead = true;
  return true;
}

// Float weights, or integer ones dequantized (fuse_qdq takes those next).
bool constant_weights(const Graph& g, ValueId w) {
  if (constant_f32(g, w)) return true;
  auto q = dequantize_of(g, w);
  return q && g.value(q->integer).is_constant();
}

// Activation ops a fused epilogue can apply, with their parameters.
bool activation_of(const Graph& g, const Node& n, std::string* name, std::vector<float>* params) {
  const std::string& t = n.op_type;
  if (t == "Relu" || t == "HardSwish" || t == "Sigmoid" || t == "Tanh") {
    *name = t;
    params->clear();
    return true;
  }
  if (t == "LeakyRelu") {
    *name = t;
    *params = {n.attrs.get_float("alpha", 0.01f)};
    return true;
  }
  if (t == "HardSigmoid") {
    *name = t;
    *params = {n.attrs.get_float("alpha", 0.2f), n.attrs.get_float("beta", 0.5f)};
    return true;
  }
  if (t == "Clip") {
    float lo = n.attrs.get_float("min", -INFINITY), hi = n.attrs.get_float("max", INFINITY);
    for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoValue) continue;
      const Value& v = g.value(n.inputs[i]);
      if (!v.constant || v.constant->numel() != 1) return false;
      (i == 1 ? lo : hi) = float(v.constant->scalar_at(0));
    }
    *name = t;
    *params = {lo, hi};
    return true;
  }
  return false;
}

// y -> Sigmoid(y) = s -> Mul(y, s): SiLU written out by exporters. Returns the
// Mul node when `y` is consumed exactly that way.
NodeId silu_tail(const Graph& g, const std::vector<std::vector<NodeId>>& cons, ValueId y) {
  if (is_graph_output(g, y) || cons[size_t(y)].size() != 2) return -1;
  NodeId sig = -1, mul = -1;
  for (NodeId c : cons[size_t(y)]) {
    const std::string& t = g.nodes[size_t(c)].op_type;
    if (t == "Sigmoid") sig = c;
    else if (t == "Mul") mul = c;
  }
  if (sig < 0 || mul < 0) return -1;
  ValueId s = g.nodes[size_t(sig)].outputs[0];
  if (sole_consumer(g, cons, s) != mul) return -1;
  const Node& m = g.nodes[size_t(mul)];
  bool ok = (m.inputs[0] == y && m.inputs[1] == s) || (m.inputs[0] == s && m.inputs[1] == y);
  return ok ? mul : -1;
}

// Absorbs an activation reading `fused`'s output into it. Returns true if done.
bool absorb_activation(Graph& g, const std::vector<std::vector<NodeId>>& cons, Node& fused) {
  ValueId y = fused.outputs[0];
  if (ActivationTail tail; match_activation_tail(g, cons, y, &tail)) {
    for (NodeId n : tail.nodes) g.nodes[size_t(n)].dead = true;
    fused.outputs[0] = tail.output;
    fused.attrs.set("activation", tail.activation);
    fused.attrs.set("activation_params", tail.params);
    return true;
  }
  if (NodeId mul = silu_tail(g, cons, y); mul >= 0) {
    for (NodeId c : cons[size_t(y)]) g.nodes[size_t(c)].dead = true;
    fused.outputs[0] = g.nodes[size_t(mul)].outputs[0];
    fused.attrs.set("activation", std::string("SiLU"));
    return true;
  }
  NodeId a = sole_consumer(g, cons, y);
  if (a < 0) return false;
  Node& act = g.nodes[size_t(a)];
  std::string name;
  std::vector<float> params;
  if (!activation_of(g, act, &name, &params)) return false;
  fused.attrs.set("activation", name);
  fused.attrs.set("activation_params", params);
  fused.outputs[0] = act.outputs[0];
  act.dead = true;
  return true;
}

// Makes `conv` a tandem.FusedConv with an explicit bias input.
void make_fused_conv(Graph& g, Node& conv) {
  conv.op_type = "tandem.FusedConv";
  if (conv.inputs.size() < 3 || conv.inputs[2] == kNoValue) {
    int64_t m = g.value(conv.inputs[1]).shape.at(0);
    conv.inputs.resize(3);
    conv.inputs[2] = g.add_constant(conv.name + "_B_zero", Tensor::zeros(DType::f32, {m}));
  }
  conv.attrs.set("activation", std::string());
  conv.attrs.set("activation_params", std::vector<float>{});
  conv.attrs.set("has_residual", int64_t(0));
}

// The values of `v`, when it is an f32 constant of one value per output
// channel of `y` ([M, 1, 1], [1, M, 1, 1], right-aligned against [N, M,
// spatial...]) or of one value, as M factors; empty otherwise.
std::vector<double> per_channel_constant(const Graph& g, ValueId v, ValueId y, int64_t m) {
  const Tensor* c = constant_f32(g, v);
  const Value& out = g.value(y);
  if (!c || out.dtype != DType::f32 || out.shape.size() < 2 || out.shape[1] != m) return {};
  const Shape& cs = c->shape();
  if (c->numel() != 1) {
    if (c->numel() != m || cs.size() > out.shape.size() || cs.size() + 1 < out.shape.size())
      return {};
    const size_t lead = out.shape.size() - cs.size();
    for (size_t d = 0; d < cs.size(); ++d)
      if (cs[d] != (lead + d == 1 ? m : 1)) return {};
  }
  std::vector<double> f(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) f[size_t(o)] = c->data<float>()[c->numel() == 1 ? 0 : o];
  return f;
}

// conv -> Mul(conv, s) and/or -> Add(conv, c), s and c per output channel: s
// scales the weights and the bias, c joins the bias (TF.js models keep a
// batch norm as such a Mul and Add after each convolution, as FaceRes
// does). Returns the number of nodes absorbed.
int absorb_channel_affine(Graph& g, Node& conv) {
  int absorbed = 0;
  for (const char* op : {"Mul", "Add"}) {
    const auto cons = g.consumers();
    const ValueId y = conv.outputs[0];
    // An activation written out from here (hard-sigmoid's y + 3 first) is
    // the epilogue's to take whole.
    if (ActivationTail tail; match_activation_tail(g, cons, y, &tail)) break;
    const NodeId a = sole_consumer(g, cons, y);
    if (a < 0 || g.nodes[size_t(a)].op_type != op || g.nodes[size_t(a)].inputs.size() != 2)
      continue;
    Node& n = g.nodes[size_t(a)];
    const ValueId other = n.inputs[0] == y ? n.inputs[1] : n.inputs[0];
    const Tensor* b = constant_f32(g, conv.inputs[2]);
    if (other == y || !b) continue;
    const std::vector<double> f = per_channel_constant(g, other, y, b->numel());
    if (f.empty()) continue;
    Tensor nb = b->clone();
    if (std::string(op) == "Mul") {
      if (!scale_float_weights(g, conv, f, "scaled")) continue;
      for (size_t o = 0; o < f.size(); ++o) nb.data<float>()[o] = float(nb.data<float>()[o] * f[o]);
    } else {
      for (size_t o = 0; o < f.size(); ++o) nb.data<float>()[o] = float(nb.data<float>()[o] + f[o]);
    }
    conv.inputs[2] = g.add_constant(conv.name + "_B_" + op, std::move(nb));
    conv.outputs[0] = n.outputs[0];
    n.dead = true;
    ++absorbed;
  }
  return absorbed;
}

// conv -> Add(conv, r) where r has the output's shape: the Add node becomes
// the fused conv (at the Add's position, after r is computed). Returns the
// fused node's id, or -1 when the pattern does not apply.
NodeId absorb_residual(Graph& g, const std::vector<std::vector<NodeId>>& cons, NodeId conv_id) {
  Node& conv = g.nodes[size_t(conv_id)];
  ValueId y = conv.outputs[0];
  NodeId a = sole_consumer(g, cons, y);
  if (a < 0 || g.nodes[size_t(a)].op_type != "Add") return -1;
  Node& add = g.nodes[size_t(a)];
  ValueId r = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
  if (r == y || g.value(r).shape != g.value(y).shape || g.value(r).dtype != g.value(y).dtype)
    return -1;
  Node fused = conv;
  fused.inputs.push_back(r);
  fused.attrs.set("has_residual", int64_t(1));
  fused.outputs = add.outputs;
  fused.name = conv.name;
  add = std::move(fused);
  g.nodes[size_t(conv_id)].dead = true;
  return a;
}

}  // namespace

int fold_batchnorm(Graph& g) {
  auto cons = g.consumers();
  int folded = 0;
  for (Node& n : g.nodes) {
    if (n.dead || n.op_type != "Conv" || n.outputs.size() != 1) continue;
    NodeId c = sole_consumer(g, cons, n.outputs[0]);
    if (c < 0 || g.nodes[size_t(c)].op_type != "BatchNormalization") continue;
    if (fold_one_batchnorm(g, cons, n, g.nodes[size_t(c)])) ++folded;
  }
  g.compact();
  return folded;
}

int fuse_conv_epilogues(Graph& g) {
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || n.outputs.size() != 1) continue;
    if (n.op_type == "Conv" && constant_weights(g, n.inputs[1])) {
      make_fused_conv(g, n);
      auto cons = g.consumers();
      if (absorb_channel_affine(g, g.nodes[i]) > 0) cons = g.consumers();
      NodeId at = absorb_residual(g, cons, NodeId(i));
      if (at >= 0) cons = g.consumers();
      else at = NodeId(i);
      absorb_activation(g, cons, g.nodes[size_t(at)]);
      ++fused;
    } else if (n.op_type == "Gemm" && n.inputs.size() >= 2) {
      auto cons = g.consumers();
      Node copy = n;
      copy.op_type = "tandem.FusedGemm";
      copy.attrs.set("activation", std::string());
      copy.attrs.set("activation_params", std::vector<float>{});
      if (absorb_activation(g, cons, copy)) {
        n = std::move(copy);
        ++fused;
      }
    }
  }
  g.compact();
  return fused;
}

}  // namespace tandem
