#pragma once
// A trained model -> an ONNX inference model: the eval-mode forward (batch
// norm with its running statistics, dropout gone) as ONNX ops (Conv,
// BatchNormalization, Relu, MaxPool, Gemm, Flatten, Add, GlobalAveragePool,
// ...; each layer's Module::to_graph), weights as initializers named by their
// state_dict keys. One input [N, C, H, W] with a dynamic batch ("batch"), one
// output [N, classes].
#include <string>

#include "graph/graph.h"
#include "train/layers/module.h"

namespace tandem::train {

struct ExportOptions {
  std::string input_name = "input";
  std::string output_name = "logits";
  int opset = 17;
};

// `sample` is one input's [C, H, W]. The model runs one eval-mode forward on
// a zero sample (its training mode is restored) to learn the output's shape.
Graph model_to_graph(Module& model, const Shape& sample, const ExportOptions& options = {});
// model_to_graph written as an ONNX file (atomically; errors name `path`).
void export_onnx(Module& model, const Shape& sample, const std::string& path, const ExportOptions& options = {});

}  // namespace tandem::train
