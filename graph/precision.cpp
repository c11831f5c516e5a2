// Runs a float32 graph in float16 or bfloat16: graph inputs are cast down on
// entry, float constants converted once here, float outputs cast back up, so
// callers still exchange float32 tensors. Constants an op reads as a shape
// argument (Resize's scales, see ops::value_inputs) stay float32, as do
// values the executor folds anyway. BatchNorm folding and epilogue fusion run
// before this, in float32, so folded weights round once.
#include <unordered_set>

#include "core/half.h"
#include "graph/passes.h"
#include "ops/schema.h"
#include "ops/shape_ops.h"

namespace tandem {

namespace {

Tensor convert_constant(const Tensor& t, DType to) {
  Tensor r = Tensor::empty(to, t.shape());
  const float* s = t.data<float>();
  auto* d = static_cast<uint16_t*>(r.raw());
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = to == DType::f16 ? float_to_f16(s[i]) : float_to_bf16(s[i]);
  return r;
}

Node cast_node(const std::string& name, ValueId in, ValueId out, DType to) {
  Node n;
  n.op_type = "Cast";
  n.name = name;
  n.inputs = {in};
  n.outputs = {out};
  n.attrs.set("to", ops::onnx_code_of(to));
  return n;
}

// Constants some node reads as a shape argument rather than as data.
std::unordered_set<ValueId> shape_argument_constants(const Graph& g) {
  std::unordered_set<ValueId> r;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    for (int i : ops::value_inputs(n.op_type))
      if (size_t(i) < n.inputs.size() && n.inputs[size_t(i)] != kNoValue) r.insert(n.inputs[size_t(i)]);
  }
  return r;
}

}  // namespace

void lower_precision(Graph& g, DType to, bool inputs_too) {
  check(to == DType::f16 || to == DType::bf16, "lower_precision: f16 or bf16 only");
  std::unordered_set<ValueId> keep = shape_argument_constants(g);
  // A graph input the session specialized into a constant (a scalar) still
  // takes f32 from the caller; it is cast below like any input, and the cast
  // folds.
  keep.insert(g.inputs.begin(), g.inputs.end());
  for (Value& v : g.values)
    if (v.constant && v.constant->dtype() == DType::f32 && !keep.count(ValueId(&v - g.values.data()))) {
      v.constant = convert_constant(*v.constant, to);
      v.dtype = to;
    }
  std::vector<Node> casts;
  for (ValueId& in : g.inputs) {
    if (g.value(in).dtype != DType::f32) continue;
    if (inputs_too && !g.value(in).constant) {
      g.value(in).dtype = to;
      continue;
    }
    // The graph input keeps its id and float32 type; its readers read the cast.
    Value low = g.value(in);
    low.name += "/lowered";
    low.dtype = to;
    low.producer = -1;
    low.constant.reset();
    ValueId low_id = g.add_value(low);
    g.replace_uses(in, low_id);
    casts.push_back(cast_node(g.value(in).name + "/to_low", in, low_id, to));
  }
  for (ValueId& out : g.outputs) {
    const Value& v = g.value(out);
    if (v.dtype != DType::f32 || v.is_constant()) continue;
    Value high = v;
    high.name = v.name;
    g.value(out).name += "/low";
    high.producer = -1;
    ValueId high_id = g.add_value(high);
    casts.push_back(cast_node(high.name + "/to_f32", out, high_id, DType::f32));
    out = high_id;
  }
  for (Node& n : casts) g.add_node(std::move(n));
  g.topo_sort();
}

}  // namespace tandem
