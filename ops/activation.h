#pragma once
// The activation a fusion pass folds into its producer (tandem.FusedConv,
// tandem.FusedGemm). Attributes:
//   activation        string: "", "Relu", "LeakyRelu", "Clip", "HardSwish",
//                     "HardSigmoid", "Sigmoid", "Tanh", "SiLU" (x * sigmoid(x),
//                     the Sigmoid+Mul pair exporters write for Swish)
//   activation_params floats: LeakyRelu [alpha] (default 0.01), Clip [min,max]
//                     (both required), HardSigmoid [alpha,beta,max] (default
//                     0.2,0.5,1: clip(alpha*x + beta, 0, max)), HardSwish
//                     [scale] (default 1: scale * x * relu6(x + 3) / 6). The
//                     extra max/scale let TensorFlow's written-out forms with
//                     a rounded 1/6 constant fuse without changing the result.
#include <string>

#include "core/attributes.h"

namespace tandem::ops {

enum class ActivationKind { none, relu, leaky_relu, clip, hard_swish, hard_sigmoid, sigmoid, tanh, silu };

struct FusedActivation {
  ActivationKind kind = ActivationKind::none;
  float alpha = 0.f;  // LeakyRelu slope, Clip min, HardSigmoid alpha
  float beta = 0.f;   // Clip max, HardSigmoid beta
  float gamma = 1.f;  // HardSigmoid upper bound, HardSwish output scale
};

// Throws Error for an unknown activation name or a wrong parameter count.
FusedActivation parse_fused_activation(const Attributes& attrs);

}  // namespace tandem::ops
