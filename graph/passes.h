#pragma once
// Graph-to-graph passes, run by Session::compile in this order:
//   bind_input_shapes -> infer_and_fold -> fuse_gelu -> fuse_matmul_bias (GPU sessions)
//   -> fold_batchnorm -> fuse_conv_epilogues -> fuse_qdq (QDQ models)
//   -> fuse_attention (GPU sessions) -> infer_and_fold (refresh) -> compact
#include <map>
#include <string>

#include "core/backend.h"
#include "graph/graph.h"

namespace tandem {

// Fixes each runtime input's shape (replacing -1 extents); throws Error when a
// given shape contradicts a static extent of the model.
void bind_input_shapes(Graph& g, const std::map<std::string, Shape>& shapes);

// Walks nodes in order, infers every output's dtype and shape (ops/), and
// evaluates nodes whose inputs are all constant on `backend` (the CPU), turning
// their outputs into constants. `Shape` of a statically shaped value folds too,
// so exporter chains like Shape->Gather->Concat->Reshape collapse. With
// keep_dequantize, DequantizeLinear nodes stay (and what only they feed
// stays unfolded) for fuse_qdq to find the integers behind them.
void infer_and_fold(Graph& g, Backend& cpu, bool keep_dequantize = false);

// Conv(W,B) -> BatchNormalization(scale,B,mean,var) with constant BN inputs
// becomes one Conv with rescaled weights and bias. Returns the count folded.
int fold_batchnorm(Graph& g);

// Conv [+ Add(residual)] [+ activation] -> tandem.FusedConv (activations
// written out as several nodes too: graph/activation_patterns.h), and
// Gemm [+ activation] -> tandem.FusedGemm, so oneDNN applies them as
// post-ops in the same pass over memory. Returns the count fused.
int fuse_conv_epilogues(Graph& g);

// GELU written out as Div/Erf/Add/Mul/Mul (PyTorch's export before opset
// 20) becomes one Gelu node (approximate "none"). Returns the count fused.
int fuse_gelu(Graph& g);

// MatMul(X, W [K, N]) + Add(constant [N] bias) becomes Gemm(X as [M, K],
// W, bias) between views of X and the result. Returns the count fused.
int fuse_matmul_bias(Graph& g);

// MatMul -> [scalar Mul/Div] -> Softmax -> MatMul whose operands are head
// views (Reshape/Transpose/Slice/Gather of other tensors) becomes one
// tandem.Attention reading those tensors in place (ops/attention.h). Only
// chains the GPU kernel takes as they are fuse. Returns the count fused.
int fuse_attention(Graph& g);

// A QDQ model's DequantizeLinear -> FusedConv [-> QuantizeLinear] becomes
// tandem.QConv on the integers (ops/qconv.h), a per-tensor
// QuantizeLinear after a max pooling moves above it and a DequantizeLinear
// before one below it. Needs the
// DequantizeLinear nodes of constants unfolded (infer_and_fold's
// keep_dequantize). Returns the count of convolutions made integer.
// What the backend's integer convolution takes: oneDNN's takes every QDQ
// form; cuDNN's (cuda/qconv.cpp) only symmetric s8 activations, 2-D with one
// group and equal pads, ReLU or none, channels in multiples of 16, and its
// max pooling stays in float. A convolution outside the form stays a
// float one, its weights dequantized once.
struct IntegerConvForm {
  bool any_zero_point = true;      // u8 and i8 with zero points; else s8, zero point 0
  bool any_activation = true;      // else ReLU or none
  bool any_shape = true;           // else 2-D, one group, equal begin and end pads
  bool integer_max_pool = true;    // quantize / dequantize move across max pooling
  int64_t channel_multiple = 1;    // input and output channels
  bool real_residual = true;       // a float residual joins in the epilogue
};
IntegerConvForm cpu_integer_conv_form();
IntegerConvForm gpu_integer_conv_form();
// `left_in_float`, when given, counts the convolutions with dequantized
// operands the form did not take.
int fuse_qdq(Graph& g, const IntegerConvForm& form = cpu_integer_conv_form(), int* left_in_float = nullptr);

// Makes a float32 graph compute in `to` (f16 or bf16): inputs cast down,
// float constants converted (shape arguments excepted), outputs cast back to
// float32. Run after fusion; infer_and_fold afterwards re-derives dtypes.
// With inputs_too, float32 graph inputs themselves become `to` (no cast).
void lower_precision(Graph& g, DType to, bool inputs_too = false);

}  // namespace tandem
