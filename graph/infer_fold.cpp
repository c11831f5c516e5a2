#include <algorithm>
#include <unordered_set>

#include "graph/op_eval.h"
#include "graph/passes.h"
#include "graph/rewrite_utils.h"
#include "ops/schema.h"

namespace tandem {

namespace {

// Ops whose value must never be computed at compile time.
bool never_fold(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"RandomNormal", "RandomUniform",
                                                       "RandomNormalLike", "RandomUniformLike",
                                                       "Multinomial", "Bernoulli"};
  return kOps.count(op) != 0;
}

// Folding materialises a value at import, whatever its size. One bigger
// than this is left to run time, where its memory is planned with the rest
// and a shortage fails that run: a model file of a few hundred bytes must
// not make the import allocate terabytes. Real weight rearrangements stay
// far below (VGG-16's largest fully connected weight is 411 MB in fp32).
constexpr int64_t kMaxFoldedBytes = int64_t(1) << 30;

bool small_enough_to_fold(const std::vector<TensorDesc>& outs) {
  int64_t bytes = 0;
  for (const TensorDesc& d : outs) {
    if (!shape_is_static(d.shape)) return false;
    const int64_t n = shape_numel(d.shape), size = std::max<int64_t>(1, int64_t(dtype_size(d.dtype)));
    if (n > (kMaxFoldedBytes - bytes) / size) return false;
    bytes += n * size;
  }
  return true;
}

bool all_inputs_constant(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (v != kNoValue && !g.value(v).is_constant()) return false;
  return true;
}

Tensor shape_of(const Graph& g, const Node& n) {
  const Shape& s = g.value(n.inputs[0]).shape;
  int64_t rank = int64_t(s.size());
  int64_t start = n.attrs.get_int("start", 0), end = n.attrs.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return Tensor::from_vector(std::vector<int64_t>(s.begin() + start, s.begin() + end),
                             {end - start});
}

void fold_node(Graph& g, Node& n, Backend& cpu) {
  std::vector<Tensor> outs;
  if (n.op_type == "Shape") {
    outs = {shape_of(g, n)};
  } else {
    OpEval e;
    e.op_type = n.op_type;
    e.node = n.name;
    e.attrs = &n.attrs;
    e.opset = g.opset;
    e.num_outputs = int(n.outputs.size());
    for (ValueId v : n.inputs) {
      e.inputs.push_back(v == kNoValue ? Tensor() : *g.value(v).constant);
      e.constant.push_back(true);
    }
    outs = evaluate_op(cpu, e);
  }
  for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;
    Value& v = g.value(n.outputs[i]);
    // Folded values must not alias constants that later passes may rewrite.
    v.constant = outs[i].clone();
    v.producer = -1;
  }
  n.dead = true;
}

}  // namespace

void bind_input_shapes(Graph& g, const std::map<std::string, Shape>& shapes) {
  for (ValueId id : g.inputs) {
    Value& v = g.value(id);
    auto it = shapes.find(v.name);
    if (it == shapes.end()) continue;
    const Shape& given = it->second;
    ErrorContext ctx{g.source, "", "", shape_str(given)};
    check(v.shape.empty() || given.size() == v.shape.size(),
          "input '" + v.name + "' expects rank " + std::to_string(v.shape.size()), ctx);
    for (size_t d = 0; d < v.shape.size(); ++d)
      check(v.shape[d] < 0 || v.shape[d] == given[d],
            "input '" + v.name + "' expects shape " + shape_str(v.shape), ctx);
    v.shape = given;
  }
}

void infer_and_fold(Graph& g, Backend& cpu, bool keep_dequantize) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead) continue;
    try {
      std::vector<TensorDesc> outs = ops::infer_outputs(infer_context_of(g, n));
      for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) {
        if (n.outputs[k] == kNoValue) continue;
        Value& v = g.value(n.outputs[k]);
        v.dtype = outs[k].dtype;
        v.shape = outs[k].shape;
      }
      bool shape_only = n.op_type == "Shape" && shape_is_static(g.value(n.inputs[0]).shape);
      const bool kept = keep_dequantize && n.op_type == "DequantizeLinear";
      if (!never_fold(n.op_type) && !kept && (shape_only || (all_inputs_constant(g, n) && small_enough_to_fold(outs))))
        fold_node(g, n, cpu);
    } catch (const Error& e) {
      throw e.with_context(g.context(NodeId(i)));
    }
  }
}

}  // namespace tandem
