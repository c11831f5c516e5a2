// MatMul(X [..., K], W [K, N]) followed by Add of a constant bias of N
// values along the last axis ([N], [1, N], ...) becomes Gemm(X viewed as
// [M, K], W, bias): the bias then rides on the matrix product (cuBLASLt's
// bias epilogue, oneDNN's) instead of taking another pass over the [M, N]
// result. Every projection of a transformer block (attention's in and out,
// the MLP's two) is exported this way; in ViT-B/16 at fp16 on the GPU these
// adds were a fifth of the run. A rank > 2 X is reshaped to [M, K] and the
// result back: views, no copies. GPU sessions only: on the CPU oneDNN runs
// the MatMul and the Add faster than its Gemm (graph/session.cpp).
#include <utility>

#include "graph/passes.h"
#include "graph/rewrite_utils.h"

namespace tandem {

namespace {

// The constant behind `v` when it is a float32 bias of N values along its
// last axis, all others 1, with no more axes than `rank`; else nullptr.
const Tensor* bias_of(const Graph& g, ValueId v, int64_t n, size_t rank) {
  const Tensor* t = constant_f32(g, v);
  if (!t || t->rank() == 0 || size_t(t->rank()) > rank || t->shape().back() != n || t->numel() != n)
    return nullptr;
  return t;
}

ValueId add_shape(Graph& g, const std::string& name, const Shape& s) {
  return g.add_constant(name,
                        Tensor::from_vector<int64_t>(std::vector<int64_t>(s), {int64_t(s.size())}));
}

ValueId add_value(Graph& g, const std::string& name, const Shape& s) {
  Value v;
  v.name = name;
  v.dtype = DType::f32;
  v.shape = s;
  return g.add_value(v);
}

Node reshape_node(const std::string& name, ValueId x, ValueId shape, ValueId y) {
  Node r;
  r.op_type = "Reshape";
  r.name = name;
  r.inputs = {x, shape};
  r.outputs = {y};
  return r;
}

}  // namespace

int fuse_matmul_bias(Graph& g) {
  const std::vector<std::vector<NodeId>> cons = g.consumers();
  int fused = 0;
  std::vector<std::pair<size_t, Node>> before;  // new nodes, each to go before node `first`
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead || g.nodes[i].op_type != "MatMul" || g.nodes[i].inputs.size() != 2)
      continue;
    const ValueId x = g.nodes[i].inputs[0], w = g.nodes[i].inputs[1], y = g.nodes[i].outputs[0];
    const Shape xs = g.value(x).shape, ws = g.value(w).shape, ys = g.value(y).shape;
    if (ws.size() != 2 || xs.size() < 2 || g.value(y).dtype != DType::f32 || shape_numel(ys) <= 0)
      continue;
    const NodeId a = sole_consumer(g, cons, y);
    if (a < 0 || g.nodes[size_t(a)].op_type != "Add" || g.nodes[size_t(a)].inputs.size() != 2)
      continue;
    Node& add = g.nodes[size_t(a)];
    const ValueId other = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    const int64_t k = ws[0], n = ws[1];
    const Tensor* bias = bias_of(g, other, n, ys.size());
    if (!bias || g.value(add.outputs[0]).shape != ys) continue;

    const std::string base = g.nodes[i].name;
    const ValueId b = g.add_constant(base + "/bias", bias->reshaped({n}));
    Node& mm = g.nodes[i];
    mm.op_type = "Gemm";
    mm.attrs = Attributes();
    if (xs.size() == 2) {
      mm.inputs = {x, w, b};
      mm.outputs = add.outputs;
      add.dead = true;
    } else {
      const int64_t m = shape_numel(xs) / k;
      const ValueId x2 = add_value(g, base + "/rows", {m, k}),
                    y2 = add_value(g, base + "/gemm", {m, n});
      const ValueId to_rows = add_shape(g, base + "/rows_shape", {m, k});
      const ValueId to_y = add_shape(g, base + "/out_shape", ys);
      Node& gemm = g.nodes[i];
      gemm.inputs = {x2, w, b};
      gemm.outputs = {y2};
      Node& back = g.nodes[size_t(a)];
      back = reshape_node(back.name, y2, to_y, back.outputs[0]);
      before.push_back({i, reshape_node(base + "/to_rows", x, to_rows, x2)});
    }
    ++fused;
  }
  if (!before.empty()) {  // in place, so the order (and the memory plan that follows it) stays
    std::vector<Node> nodes;
    size_t next = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (; next < before.size() && before[next].first == i; ++next)
        nodes.push_back(std::move(before[next].second));
      nodes.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(nodes);
  }
  g.compact();  // also sets every value's producer anew
  return fused;
}

}  // namespace tandem
