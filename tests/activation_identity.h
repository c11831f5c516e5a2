#pragma once
// A trained model's inference is its training forward, bit for bit: each
// activation training's layers offer, through the training table's
// eltwise_forward, against the graphs an exported model runs for it: the
// standalone op (Relu, HardSwish, Gelu, ...) and the epilogue of a fused
// 1x1 convolution (tandem.FusedConv, what the fusion passes make of a conv
// and its activation) whose identity weights pass x through exactly (each
// output is one product by 1.0 plus zeros, and a zero bias). Shared by the CPU and CUDA tests.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "ops/activation.h"
#include "tests/graph_builder.h"

namespace tandem::testing {

struct ActivationCase {
  std::string what;
  ops::Activation act;
};

// Every kind training's layers build (train/functional, train/layers), with
// parameters away from the defaults where a kind has them.
inline std::vector<ActivationCase> trainable_activations() {
  using K = ops::ActivationKind;
  return {{"relu", {K::relu}},       {"leaky_relu 0.1", {K::leaky_relu, 0.1f}},
          {"silu", {K::silu}},       {"hardswish", {K::hard_swish}},
          {"sigmoid", {K::sigmoid}}, {"tanh", {K::tanh}},
          {"gelu", {K::gelu}},       {"gelu tanh", {K::gelu_tanh}}};
}

// x [N, C, H, W] -> the standalone op; nullopt where ONNX has none (SiLU is
// Sigmoid and Mul in ONNX, fused back into one activation).
inline std::optional<Graph> standalone_graph(const ops::Activation& a, const Shape& x_shape) {
  using K = ops::ActivationKind;
  if (a.kind == K::silu) return std::nullopt;
  GraphBuilder b;
  ValueId x = b.input("x", x_shape);
  Attributes attrs;
  if (a.kind == K::leaky_relu) attrs.set("alpha", a.alpha);
  if (a.kind == K::gelu) attrs.set("approximate", std::string("none"));
  if (a.kind == K::gelu_tanh) attrs.set("approximate", std::string("tanh"));
  b.output(b.node(ops::activation_op_type(a.kind), {x}, attrs));
  return std::move(b.g);
}

// x [N, C, H, W] -> FusedConv with 1x1 identity weights and the activation
// as its epilogue; nullopt for kinds the fused form does not take (GELU).
inline std::optional<Graph> fused_identity_graph(const ops::Activation& a, const Shape& x_shape) {
  using K = ops::ActivationKind;
  if (a.kind == K::gelu || a.kind == K::gelu_tanh) return std::nullopt;
  const int64_t c = x_shape[1];
  Tensor w = Tensor::zeros(DType::f32, {c, c, 1, 1});
  for (int64_t i = 0; i < c; ++i) w.data<float>()[i * c + i] = 1.f;
  GraphBuilder b;
  ValueId x = b.input("x", x_shape);
  ValueId wv = b.constant("w", w), bias = b.constant("b", Tensor::zeros(DType::f32, {c}));
  Attributes attrs;
  attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
  attrs.set("activation",
            std::string(a.kind == K::silu ? "SiLU" : ops::activation_op_type(a.kind)));
  if (a.kind == K::leaky_relu) attrs.set("activation_params", std::vector<float>{a.alpha});
  b.output(b.node("tandem.FusedConv", {x, wv, bias}, attrs));
  return std::move(b.g);
}

// The graphs an exported model runs for `a`, each with its form's name.
inline std::vector<std::pair<std::string, Graph>> inference_graphs(const ops::Activation& a,
                                                                   const Shape& x_shape) {
  std::vector<std::pair<std::string, Graph>> graphs;
  if (auto g = standalone_graph(a, x_shape)) graphs.emplace_back("standalone", std::move(*g));
  if (auto g = fused_identity_graph(a, x_shape))
    graphs.emplace_back("fused 1x1 conv", std::move(*g));
  return graphs;
}

}  // namespace tandem::testing
