#pragma once
// Small queries the rewriting passes share. A rewrite may only remove a
// value no one else can observe: one reader, not a graph output.
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "ops/schema.h"

namespace tandem {

bool is_graph_output(const Graph& g, ValueId v);

// The one live node reading `v`, or -1 when there are none or several (or v
// is a graph output).
NodeId sole_consumer(const Graph& g, const std::vector<std::vector<NodeId>>& cons, ValueId v);

// The f32 constant behind `v`, or nullptr.
const Tensor* constant_f32(const Graph& g, ValueId v);

// True and *out set when `v` is a one-element f32 constant.
bool scalar_f32(const Graph& g, ValueId v, float* out);

// Node n's inputs as shape inference and the ops/ parsers take them.
ops::InferContext infer_context_of(const Graph& g, const Node& n);

}  // namespace tandem

namespace tandem {

// A QuantizeLinear or DequantizeLinear node whose scale and zero point are
// constants: `integer` is the 8-bit side (a Dequantize's input, a
// Quantize's output), `dtype` its type; one scale and zero point per tensor,
// or one per index of `axis`.
struct LinearQuantization {
  NodeId node = -1;
  ValueId integer = kNoValue;
  DType dtype = DType::u8;
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
  int64_t axis = 1;
  bool per_tensor() const { return scales.size() == 1; }
};

// The DequantizeLinear that produces `v`, if any, with constant parameters.
std::optional<LinearQuantization> dequantize_of(const Graph& g, ValueId v);
// Node n's parameters if it is a QuantizeLinear with constant parameters.
std::optional<LinearQuantization> quantize_params(const Graph& g, NodeId n);

}  // namespace tandem
