#pragma once
// What a layer's to_graph() writes with (train/layers/module.h): the graph of
// a model being exported, initializers named by their state_dict keys and
// nodes named "<Op>_<k>" in order. ONNX ops only (the default domain, the
// graph's opset), so the graph is a valid ONNX model as it stands.
#include <string>
#include <vector>

#include "ops/train_backend.h"
#include "graph/graph.h"

namespace tandem::train {

class ExportBuilder {
 public:
  explicit ExportBuilder(Graph& g) : g_(g) {}

  // An initializer holding a copy of `t` (a later training step must not
  // change an exported graph).
  ValueId constant(const std::string& name, const Tensor& t);
  // A node of `op` reading `inputs` (kNoValue: an omitted optional input);
  // returns its one output.
  ValueId node(const std::string& op, std::vector<ValueId> inputs, Attributes attrs = {});
  Graph& graph() { return g_; }

 private:
  Graph& g_;
};

// The ONNX nodes of the stateless layers: Relu, LeakyRelu, Sigmoid, Tanh,
// HardSwish, SiLU (x * Sigmoid(x)), Gelu (from opset 20; before it, the
// Div/Erf/Add/Mul chain PyTorch writes); MaxPool / AveragePool.
ValueId export_op(ExportBuilder& g, ValueId x, const ops::Activation& p);
ValueId export_op(ExportBuilder& g, ValueId x, const ops::Pool2dParams& p);

}  // namespace tandem::train
