// Attention as exported: S = MatMul(Q, K^T), an optional scalar Mul/Div,
// constant biases added (Swin's, through reshapes of S; summed into one
// table), Softmax over S's last axis, an inference Dropout, MatMul(P, V),
// with the heads split and merged
// around it by Reshape/Transpose (and, for a fused QKV projection,
// Slice/Gather) nodes. Each operand is traced back through those view ops
// to the tensor it is a strided view of, and the result forward to the
// tensor it is finally copied into; when every view is one a BLAS can take,
// the whole chain becomes one tandem.Attention (ops/attention.h) reading and
// writing in place. ViT-B/16's export spends a third of its GPU time in the
// head transposes this removes.
//
// A view is tracked as, per logical axis, a list of (extent, stride)
// pieces over the current source's dense memory; stepping through a view op
// re-expresses each piece over the op's input, splitting it where it
// crosses that input's axes.
#include <numeric>
#include <optional>
#include <utility>

#include "graph/passes.h"
#include "graph/rewrite_utils.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace tandem {

namespace {

using Consumers = std::vector<std::vector<NodeId>>;

struct Piece {
  int64_t extent, stride;
};
using Axis = std::vector<Piece>;  // outer piece first

struct View {
  ValueId source = kNoValue;
  int64_t offset = 0;
  std::vector<Axis> axes;     // one per axis of the traced value
  double scale = 1;           // absorbed scalar factors
  std::vector<NodeId> nodes;  // absorbed view and scaling nodes
};

View dense_view(const Graph& g, ValueId v) {
  View w;
  w.source = v;
  const Shape& s = g.value(v).shape;
  std::vector<int64_t> cs = contiguous_strides(s);
  for (size_t d = 0; d < s.size(); ++d) w.axes.push_back({{s[d], s[d] == 1 ? 0 : cs[d]}});
  return w;
}

// Appends `p`, a walk over the dense memory of a tensor of shape `from`
// (strides `cs`), as pieces that each stay within one axis of `from`, with
// strides mapped through `to` (the new stride of each axis of `from`).
bool split_piece(Piece p, const Shape& from, const std::vector<int64_t>& cs,
                 const std::vector<int64_t>& to, Axis* out) {
  if (p.extent == 1) return true;
  if (p.stride == 0) {
    out->push_back(p);
    return true;
  }
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] == 1 || cs[d] > p.stride) continue;
    if (p.stride % cs[d] != 0) return false;
    const int64_t q = p.stride / cs[d];
    if (q >= from[d]) return false;
    if (q * (p.extent - 1) < from[d]) {
      out->push_back({p.extent, q * to[d]});
      return true;
    }
    // The walk wraps around axis d: an outer piece over the axes above it
    // and an inner one within it.
    if (from[d] % q != 0 || p.extent % (from[d] / q) != 0) return false;
    const int64_t inner = from[d] / q;
    if (!split_piece({p.extent / inner, cs[d] * from[d]}, from, cs, to, out)) return false;
    out->push_back({inner, q * to[d]});
    return true;
  }
  return false;
}

// Neighbouring pieces that walk as one become one.
void merge(Axis* a) {
  Axis m;
  for (Piece p : *a) {
    if (p.extent == 1) continue;
    if (!m.empty() && m.back().stride == p.stride * p.extent) {
      m.back() = {m.back().extent * p.extent, p.stride};
      continue;
    }
    m.push_back(p);
  }
  *a = m;
}

// Re-expresses `w` over new memory in which axis d of `from` has stride
// to[d] and element 0 of `from` sits at `base`. False when a piece does not
// decompose (w is then unchanged).
bool remap(View* w, const Shape& from, const std::vector<int64_t>& to, int64_t base) {
  const std::vector<int64_t> cs = contiguous_strides(from);
  View r = *w;
  for (size_t i = 0; i < w->axes.size(); ++i) {
    r.axes[i].clear();
    for (Piece p : w->axes[i])
      if (!split_piece(p, from, cs, to, &r.axes[i])) return false;
    merge(&r.axes[i]);
  }
  r.offset = base;
  for (size_t d = 0; d < from.size(); ++d) r.offset += (w->offset / cs[d]) % from[d] * to[d];
  *w = r;
  return true;
}

bool is_view_op(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}

// Steps `w` from node n's output back to its data input. False when n is
// not an op the view can see through.
bool step_back(const Graph& g, const Node& n, bool allow_scale, View* w) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return false;
  const ValueId x = n.inputs[0];
  const Shape& from = g.value(w->source).shape;
  if (is_view_op(n.op_type)) {  // the same dense memory
    w->source = x;
    return true;
  }
  const Shape& xs = g.value(x).shape;
  const std::vector<int64_t> xst = contiguous_strides(xs);
  if (n.op_type == "Transpose") {
    std::vector<int64_t> perm = ops::transpose_perm(infer_context_of(g, n));
    std::vector<int64_t> to(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) to[d] = xst[size_t(perm[d])];
    if (!remap(w, from, to, 0)) return false;
    w->source = x;
    return true;
  }
  if (n.op_type == "Slice") {
    ops::SliceSpec s = ops::slice_spec(infer_context_of(g, n));
    std::vector<int64_t> to(xs.size());
    int64_t base = 0;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (s.step[d] <= 0) return false;
      to[d] = xst[d] * s.step[d];
      base += s.start[d] * xst[d];
    }
    if (!remap(w, from, to, base)) return false;
    w->source = x;
    return true;
  }
  if (n.op_type == "Gather" && n.inputs.size() == 2) {
    const Value& idx = g.value(n.inputs[1]);
    if (!idx.constant || idx.constant->numel() != 1 || idx.shape.size() > 1) return false;
    const int64_t axis = normalize_axis(n.attrs.get_int("axis", 0), int64_t(xs.size()));
    int64_t i = int64_t(idx.constant->scalar_at(0));
    if (i < 0) i += xs[size_t(axis)];
    if (i < 0 || i >= xs[size_t(axis)]) return false;
    std::vector<int64_t> to;
    for (size_t d = 0; d < xs.size(); ++d)
      if (int64_t(d) != axis || idx.shape.size() == 1) to.push_back(xst[d]);
    if (!remap(w, from, to, i * xst[size_t(axis)])) return false;
    w->source = x;
    return true;
  }
  if (allow_scale && (n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      float c;
      const ValueId data = n.inputs[size_t(1 - k)];
      if (!scalar_f32(g, n.inputs[size_t(k)], &c) || g.value(data).shape != from) continue;
      if (n.op_type == "Div" && (k == 0 || c == 0.f)) return false;
      w->scale *= n.op_type == "Div" ? 1.0 / c : c;
      w->source = data;
      return true;
    }
  }
  return false;
}

// The views of `v` (read by `reader`) over each tensor it can be traced
// back to through nodes only this chain reads, nearest (v itself) first.
std::vector<View> trace_operand(const Graph& g, const Consumers& cons, ValueId v, NodeId reader,
                                bool allow_scale) {
  std::vector<View> steps{dense_view(g, v)};
  for (;;) {
    const View& w = steps.back();
    const NodeId p = g.value(w.source).producer;
    if (p < 0 || sole_consumer(g, cons, w.source) != reader) return steps;
    View next = w;
    if (!step_back(g, g.nodes[size_t(p)], allow_scale, &next)) return steps;
    next.nodes.push_back(p);
    steps.push_back(next);
    reader = p;
  }
}

// The views of `v` inside each tensor its value is copied into by a chain
// of Transpose and reshaping nodes that alone read it, v itself first.
std::vector<View> trace_result(const Graph& g, const Consumers& cons, ValueId v) {
  std::vector<View> steps{dense_view(g, v)};
  for (;;) {
    const View& w = steps.back();
    const NodeId c = sole_consumer(g, cons, w.source);
    if (c < 0) return steps;
    const Node& n = g.nodes[size_t(c)];
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != w.source) return steps;
    const ValueId y = n.outputs[0];
    View next = w;
    if (n.op_type == "Transpose") {
      std::vector<int64_t> perm = ops::transpose_perm(infer_context_of(g, n));
      std::vector<int64_t> ys = contiguous_strides(g.value(y).shape), to(perm.size());
      for (size_t d = 0; d < perm.size(); ++d) to[size_t(perm[d])] = ys[d];
      if (!remap(&next, g.value(w.source).shape, to, 0)) return steps;
    } else if (!is_view_op(n.op_type)) {
      return steps;
    }
    next.source = y;
    next.nodes.push_back(c);
    steps.push_back(next);
  }
}

// One (extent, stride) for the axes [first, last) of a traced view, or
// nullopt when they do not walk as one.
std::optional<int64_t> stride_of(const View& w, size_t first, size_t last, int64_t extent) {
  Axis all;
  for (size_t i = first; i < last; ++i) all.insert(all.end(), w.axes[i].begin(), w.axes[i].end());
  merge(&all);
  if (all.size() > 1 || (all.empty() ? 1 : all[0].extent) != extent) return std::nullopt;
  return all.empty() ? 0 : all[0].stride;
}

// A traced [batch axes..., rows, cols] view as an attention operand, when
// a BLAS can take it (ops::strided_matrix, 8-element aligned start).
// `swap`: the value holds the operand transposed (K^T for K).
std::optional<ops::AttentionView> as_operand(const View& w, int64_t batch, int64_t rows,
                                             int64_t cols, bool swap) {
  const size_t rank = w.axes.size(), r = rank - 2, c = rank - 1;
  std::optional<int64_t> b = stride_of(w, 0, r, batch);
  std::optional<int64_t> rs = swap ? stride_of(w, c, c + 1, rows) : stride_of(w, r, r + 1, rows);
  std::optional<int64_t> cs = swap ? stride_of(w, r, r + 1, cols) : stride_of(w, c, c + 1, cols);
  if (!b || !rs || !cs || w.offset % 8 != 0 || !ops::strided_matrix(rows, cols, *rs, *cs))
    return std::nullopt;
  ops::AttentionView v;
  v.offset = w.offset;
  v.strides = {*b, *rs, *cs};
  return v;
}

// The farthest traced view that makes an operand; the nearest, v itself
// dense, always does unless v's own rows are too short to align.
std::optional<std::pair<View, ops::AttentionView>> farthest_operand(const std::vector<View>& steps,
                                                                    int64_t batch, int64_t rows,
                                                                    int64_t cols, bool swap) {
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (std::optional<ops::AttentionView> v = as_operand(*it, batch, rows, cols, swap))
      return std::pair{*it, *v};
  return std::nullopt;
}

// A constant added to the scores, and the shape the scores had there (a
// reshape of them: the same elements in the same order).
struct AddedBias {
  const Tensor* value;
  Shape at;
};

// A bias's shape with 1s in front, to the rank of the scores where it is added.
Shape padded_shape(const AddedBias& b) {
  Shape c(b.at.size() - size_t(b.value->rank()), 1);
  c.insert(c.end(), b.value->shape().begin(), b.value->shape().end());
  return c;
}

// Element f of the scores' dense memory (of shape `at`), as a constant of
// padded shape `c` broadcast over it reads it.
int64_t broadcast_index(const Shape& at, const Shape& c, int64_t f) {
  int64_t index = 0, stride = 1;
  for (size_t d = at.size(); d-- > 0;) {
    const int64_t i = f % at[d];
    f /= at[d];
    if (c[d] != 1) index += i * stride;
    stride *= c[d];
  }
  return index;
}

// The biases summed into one [P, m, n] table, item b % P for batch item b
// of the scores (`mn` = m * n, `total` their element count); nullopt when a
// bias does not broadcast to its shape or repeats with no such period.
std::optional<Tensor> one_bias(const std::vector<AddedBias>& biases, int64_t mn, int64_t total) {
  int64_t period = mn;
  std::vector<Shape> shapes;  // each bias's, padded
  for (const AddedBias& b : biases) {
    const Shape& at = b.at;
    if (size_t(b.value->rank()) > at.size()) return std::nullopt;
    const Shape c = padded_shape(b);
    int64_t span = 1;  // the bias repeats every `span` elements of the scores
    bool varies = false;
    for (size_t d = 0; d < at.size(); ++d) {
      if (c[d] != 1 && c[d] != at[d]) return std::nullopt;
      varies = varies || c[d] != 1;
      if (varies) span *= at[d];
    }
    period = std::lcm(period, span);
    if (period > (int64_t(1) << 24) || total % period != 0) return std::nullopt;
    shapes.push_back(c);
  }
  Tensor t = Tensor::empty(DType::f32, {period / mn, mn});
  float* out = t.data<float>();
  for (int64_t f = 0; f < period; ++f) {
    double sum = 0;
    for (size_t k = 0; k < biases.size(); ++k)
      sum += biases[k].value->data<float>()[broadcast_index(biases[k].at, shapes[k], f)];
    out[f] = float(sum);
  }
  return t;
}

// Dropout (as the inference kernels take it, ops::dropout_passes_through;
// its mask unread) and Identity pass `x` through.
bool inference_identity(const Graph& g, const Consumers& cons, const Node& n, ValueId x) {
  if (n.inputs.empty() || n.inputs[0] != x) return false;
  if (n.op_type == "Identity") return n.outputs.size() == 1;
  if (n.op_type != "Dropout") return false;
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const ValueId mask = n.outputs[i];
    if (mask == kNoValue) continue;
    if (is_graph_output(g, mask)) return false;
    for (NodeId r : cons[size_t(mask)])
      if (!g.nodes[size_t(r)].dead) return false;
  }
  auto constant = [&](size_t i) -> const Tensor* {
    if (i >= n.inputs.size() || n.inputs[i] == kNoValue) return nullptr;
    const Value& v = g.value(n.inputs[i]);
    return v.constant && v.constant->numel() == 1 ? &*v.constant : nullptr;
  };
  const bool computed = (n.inputs.size() > 1 && n.inputs[1] != kNoValue && !constant(1)) ||
                        (n.inputs.size() > 2 && n.inputs[2] != kNoValue && !constant(2));
  return !computed && ops::dropout_passes_through(constant(1), constant(2));
}

bool softmax_over_last(const Graph& g, const Node& n, size_t rank) {
  if (n.op_type != "Softmax" || n.outputs.size() != 1) return false;
  const int64_t axis = n.attrs.get_int("axis", g.opset < 13 ? 1 : -1);
  return axis == int64_t(rank) - 1 || axis == -1;
}

// Fuses the chain starting at MatMul node `s`; false when it does not match.
bool fuse_at(Graph& g, const Consumers& cons, NodeId s) {
  const Node& mm = g.nodes[size_t(s)];
  if (mm.dead || mm.op_type != "MatMul" || mm.inputs.size() != 2) return false;
  const Shape& qs = g.value(mm.inputs[0]).shape;
  const Shape& ks = g.value(mm.inputs[1]).shape;
  const size_t rank = qs.size();
  if (rank < 2 || ks.size() != rank || g.value(mm.outputs[0]).dtype != DType::f32) return false;
  if (!std::equal(qs.begin(), qs.end() - 2, ks.begin())) return false;  // no batch broadcast
  std::vector<NodeId> chain{s};
  double scale = 1;
  ValueId cur = mm.outputs[0];
  NodeId next = sole_consumer(g, cons, cur);
  if (next < 0) return false;
  if (g.nodes[size_t(next)].op_type == "Mul" || g.nodes[size_t(next)].op_type == "Div") {
    View scaled = dense_view(g, g.nodes[size_t(next)].outputs[0]);
    if (!step_back(g, g.nodes[size_t(next)], true, &scaled) || scaled.source != cur) return false;
    scale = scaled.scale;
    chain.push_back(next);
    cur = g.nodes[size_t(next)].outputs[0];
    next = sole_consumer(g, cons, cur);
    if (next < 0) return false;
  }
  std::vector<AddedBias> biases;
  // Constant biases, perhaps through reshapes of the scores.
  for (;; next = sole_consumer(g, cons, cur)) {
    if (next < 0) return false;
    const Node& n = g.nodes[size_t(next)];
    if (n.outputs.size() != 1 || n.inputs.empty()) return false;
    if (is_view_op(n.op_type) && n.inputs[0] == cur) {
      chain.push_back(next);
      cur = n.outputs[0];
      continue;
    }
    if (n.op_type != "Add" || n.inputs.size() != 2) break;
    const Tensor* c = constant_f32(g, n.inputs[0] == cur ? n.inputs[1] : n.inputs[0]);
    const Shape& at = g.value(cur).shape;
    if (!c || g.value(n.outputs[0]).shape != at) return false;
    biases.push_back({c, at});
    chain.push_back(next);
    cur = n.outputs[0];
  }
  const Shape& scores = g.value(mm.outputs[0]).shape;
  if (g.value(cur).shape != scores || !softmax_over_last(g, g.nodes[size_t(next)], rank))
    return false;
  chain.push_back(next);
  ValueId probs = g.nodes[size_t(next)].outputs[0];
  NodeId out = sole_consumer(g, cons, probs);
  // Dropout at inference.
  while (out >= 0 && inference_identity(g, cons, g.nodes[size_t(out)], probs)) {
    chain.push_back(out);
    probs = g.nodes[size_t(out)].outputs[0];
    out = sole_consumer(g, cons, probs);
  }
  if (out < 0) return false;
  const Node& mm2 = g.nodes[size_t(out)];
  if (mm2.op_type != "MatMul" || mm2.inputs.size() != 2 || mm2.inputs[0] != probs ||
      mm2.inputs[1] == probs)
    return false;
  const Shape& vs = g.value(mm2.inputs[1]).shape;
  if (vs.size() != rank || !std::equal(qs.begin(), qs.end() - 2, vs.begin())) return false;
  chain.push_back(out);

  ops::AttentionParams p;
  p.batch = shape_numel(Shape(qs.begin(), qs.end() - 2));
  p.m = qs[rank - 2], p.d = qs[rank - 1], p.n = ks[rank - 1], p.dv = vs[rank - 1];
  const auto q =
      farthest_operand(trace_operand(g, cons, mm.inputs[0], s, true), p.batch, p.m, p.d, false);
  const auto kt =
      farthest_operand(trace_operand(g, cons, mm.inputs[1], s, true), p.batch, p.n, p.d, true);
  const auto v = farthest_operand(trace_operand(g, cons, mm2.inputs[1], out, false), p.batch, p.n,
                                  p.dv, false);
  const auto y = farthest_operand(trace_result(g, cons, mm2.outputs[0]), p.batch, p.m, p.dv, false);
  if (!q || !kt || !v || !y) return false;
  p.q = q->second, p.k = kt->second, p.v = v->second, p.y = y->second;
  p.scale = float(scale * q->first.scale * kt->first.scale);
  p.output_shape = g.value(y->first.source).shape;
  std::optional<Tensor> bias;
  if (!biases.empty()) {
    bias = one_bias(biases, p.m * p.n, shape_numel(scores));
    if (!bias) return false;
  }
  if (!ops::attention_fits_blas(p)) return false;
  try {
    Attributes a;
    ops::set_attention_attributes(a, p);
    std::vector<int64_t> numel{shape_numel(g.value(q->first.source).shape),
                               shape_numel(g.value(kt->first.source).shape),
                               shape_numel(g.value(v->first.source).shape)};
    if (bias) numel.push_back(bias->numel());
    ops::attention_params(a, numel);
  } catch (const Error&) {
    return false;
  }

  for (const View* w : {&q->first, &kt->first, &v->first, &y->first})
    chain.insert(chain.end(), w->nodes.begin(), w->nodes.end());
  for (NodeId n : chain) g.nodes[size_t(n)].dead = true;
  // In the place of the last node of the chain: after every input is made.
  const std::vector<NodeId>& copies = y->first.nodes;
  Node& fused = g.nodes[size_t(copies.empty() ? out : copies.back())];
  fused.dead = false;
  fused.op_type = ops::kAttentionOp;
  fused.domain.clear();
  fused.inputs = {q->first.source, kt->first.source, v->first.source};
  if (bias) fused.inputs.push_back(g.add_constant(fused.name + "/scores_bias", std::move(*bias)));
  fused.outputs = {y->first.source};
  fused.attrs = Attributes();
  ops::set_attention_attributes(fused.attrs, p);
  return true;
}

}  // namespace

int fuse_attention(Graph& g) {
  int fused = 0;
  Consumers cons = g.consumers();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].dead || g.nodes[n].op_type != "MatMul" || !fuse_at(g, cons, NodeId(n))) continue;
    ++fused;
    cons = g.consumers();  // the fused node now reads what the chain read through views
  }
  g.compact();
  return fused;
}

}  // namespace tandem
