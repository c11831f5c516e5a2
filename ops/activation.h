#pragma once
// Activations: the element-wise functions a network applies after a conv or
// gemm, as one vocabulary for the standalone ops, the ones a fusion pass
// folds into their producer, and training's activation entries. Their math
// (forward and derivative) is ops/activation_math.h.
//
// The fused form's attributes (tandem.FusedConv, tandem.FusedGemm):
//   activation        string: "", "Relu", "LeakyRelu", "Clip", "HardSwish",
//                     "HardSigmoid", "Sigmoid", "Tanh", "SiLU" (x * sigmoid(x),
//                     the Sigmoid+Mul pair exporters write for Swish)
//   activation_params floats: LeakyRelu [alpha] (default 0.01), Clip [min,max]
//                     (both required), HardSigmoid [alpha,beta,max] (default
//                     0.2,0.5,1: clip(alpha*x + beta, 0, max)), HardSwish
//                     [scale] (default 1: scale * x * relu6(x + 3) / 6). The
//                     extra max/scale let TensorFlow's written-out forms with
//                     a rounded 1/6 constant fuse without changing the result.
#include <cstdint>
#include <string>

#include "core/attributes.h"

namespace tandem::ops {

enum class ActivationKind : uint8_t {
  none, relu, leaky_relu, clip, hard_swish, hard_sigmoid, sigmoid, tanh, silu, elu, softplus,
  gelu,       // x/2 * (1 + erf(x / sqrt(2)))
  gelu_tanh,  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), Gelu approximate="tanh"
};

struct Activation {
  ActivationKind kind = ActivationKind::none;
  float alpha = 0.f;  // LeakyRelu slope, Clip min, HardSigmoid alpha, Elu alpha
  float beta = 0.f;   // Clip max, HardSigmoid beta
  float gamma = 1.f;  // HardSigmoid upper bound, HardSwish output scale
};

// The ONNX op type of a kind ("Relu", "HardSwish", ...; "" for none).
const char* activation_op_type(ActivationKind k);

// Throws Error for an unknown activation name or a wrong parameter count.
Activation parse_fused_activation(const Attributes& attrs);

}  // namespace tandem::ops
