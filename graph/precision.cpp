// Runs a float32 graph in float16 or bfloat16: graph inputs are cast down on
// entry, float constants converted once here, float outputs cast back up, so
// callers still exchange float32 tensors; casts to float32 inside the graph
// cast to the low type instead. Constants an op reads as a shape
// argument (Resize's scales, see ops::value_inputs) stay float32, as do
// values the executor folds anyway. BatchNorm folding and epilogue fusion run
// before this, in float32, so folded weights round once.
#include <algorithm>
#include <unordered_set>
#include <vector>

#include "core/half.h"
#include "graph/passes.h"
#include "ops/gemm.h"
#include "ops/qconv.h"
#include "ops/schema.h"
#include "ops/shape_ops.h"

namespace tandem {

namespace {

Tensor convert_constant(const Tensor& t, DType to) {
  Tensor r = Tensor::empty(to, t.shape());
  const float* s = t.data<float>();
  auto* d = static_cast<uint16_t*>(r.raw());
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) d[i] = to == DType::f16 ? float_to_f16(s[i]) : float_to_bf16(s[i]);
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

// Matrix products whose result is a graph output (a classifier's last
// Gemm): they stay float32, reading their activations through a cast up.
// Logits rounded to 11 (fp16) or 8 (bf16) significant bits reorder classes
// whose scores lie close together; a float32 head costs one small GEMM.
std::vector<NodeId> float32_heads(const Graph& g) {
  std::vector<NodeId> heads;
  for (ValueId out : g.outputs) {
    NodeId p = g.value(out).producer;
    if (p < 0) continue;
    const std::string& op = g.nodes[size_t(p)].op_type;
    if (op == "Gemm" || op == "MatMul" || op == ops::kFusedGemmOp) heads.push_back(p);
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  return heads;
}

// A QDQ model's integer ops (tandem.QConv, QuantizeLinear,
// DequantizeLinear) keep their real parts in float32, as ONNX types them
// and their kernels take them: scales and bias stay float32 constants, a
// real input (a residual, what is quantized) is read through a cast up, a
// real output (dequantized) is cast down for its readers.
std::vector<NodeId> integer_ops(const Graph& g) {
  std::vector<NodeId> r;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const std::string& op = g.nodes[n].op_type;
    if (!g.nodes[n].dead && (op == ops::kQConvOp || op == "QuantizeLinear" || op == "DequantizeLinear"))
      r.push_back(NodeId(n));
  }
  return r;
}

// Constants every reader of which is a head: they keep their float32 values.
std::unordered_set<ValueId> head_only_constants(const Graph& g, const std::vector<NodeId>& heads) {
  std::unordered_set<ValueId> read_by_head, read_elsewhere;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].dead) continue;
    bool head = std::binary_search(heads.begin(), heads.end(), NodeId(n));
    for (ValueId v : g.nodes[n].inputs)
      if (v != kNoValue && g.value(v).constant) (head ? read_by_head : read_elsewhere).insert(v);
  }
  std::unordered_set<ValueId> r;
  for (ValueId v : read_by_head)
    if (!read_elsewhere.count(v)) r.insert(v);
  return r;
}

}  // namespace

void lower_precision(Graph& g, DType to, bool inputs_too) {
  check(to == DType::f16 || to == DType::bf16, "lower_precision: f16 or bf16 only");
  std::unordered_set<ValueId> keep = shape_argument_constants(g);
  std::vector<NodeId> heads = float32_heads(g);
  const std::vector<NodeId> integer = integer_ops(g);
  heads.insert(heads.end(), integer.begin(), integer.end());
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  for (ValueId v : head_only_constants(g, heads)) keep.insert(v);
  // A graph input the session specialized into a constant (a scalar) still
  // takes f32 from the caller; it is cast below like any input, and the cast
  // folds.
  keep.insert(g.inputs.begin(), g.inputs.end());
  for (Value& v : g.values)
    if (v.constant && v.constant->dtype() == DType::f32 && !keep.count(ValueId(&v - g.values.data()))) {
      v.constant = convert_constant(*v.constant, to);
      v.dtype = to;
    }
  // A Cast to float32 inside the graph (a mask or an index made a float)
  // makes the low type instead, or its result would meet low-precision
  // activations in one op. The casts added below are made afterwards.
  for (Node& n : g.nodes)
    if (!n.dead && n.op_type == "Cast" && n.attrs.get_int("to", 0) == ops::onnx_code_of(DType::f32))
      n.attrs.set("to", ops::onnx_code_of(to));
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
  // A real value an integer op makes stays float32: integer ops and
  // heads read it as it is, the others through one cast down.
  const auto made_by_integer_op = [&](ValueId v) {
    return std::binary_search(integer.begin(), integer.end(), g.value(v).producer);
  };
  for (NodeId h : heads) {
    // Each other activation (non-constant) input is read through a cast up.
    for (size_t i = 0; i < g.nodes[size_t(h)].inputs.size(); ++i) {
      ValueId in = g.nodes[size_t(h)].inputs[i];
      if (in == kNoValue || g.value(in).constant || !is_floating(g.value(in).dtype) || made_by_integer_op(in))
        continue;
      Value up = g.value(in);
      up.name += "/head_f32";
      up.dtype = DType::f32;
      up.producer = -1;
      up.constant.reset();
      ValueId up_id = g.add_value(up);
      g.nodes[size_t(h)].inputs[i] = up_id;
      casts.push_back(cast_node(up.name, in, up_id, DType::f32));
    }
  }
  for (NodeId q : integer) {
    const ValueId out = g.nodes[size_t(q)].outputs[0];
    if (g.value(out).dtype != DType::f32) continue;
    ValueId low_id = kNoValue;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (g.nodes[n].dead || std::binary_search(heads.begin(), heads.end(), NodeId(n))) continue;
      for (ValueId& in : g.nodes[n].inputs) {
        if (in != out) continue;
        if (low_id == kNoValue) {
          Value low = g.value(out);
          low.name += "/lowered";
          low.dtype = to;
          low.producer = -1;
          low_id = g.add_value(low);
          casts.push_back(cast_node(g.value(out).name + "/to_low", out, low_id, to));
        }
        in = low_id;
      }
    }
  }
  for (ValueId& out : g.outputs) {
    const Value& v = g.value(out);
    if (v.dtype != DType::f32 || v.is_constant()) continue;
    if (std::binary_search(heads.begin(), heads.end(), v.producer)) continue;  // float32 already
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
