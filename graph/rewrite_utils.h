#pragma once
// Small queries the rewriting passes share. A rewrite may only remove a
// value no one else can observe: one reader, not a graph output.
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
