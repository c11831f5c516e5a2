#pragma once
// TF activation names (standalone ops and the fused_ops of _FusedConv2D /
// _FusedMatMul) -> tandem IR; epilogue fusion later folds them into the
// producing Conv/Gemm.
#include <string>

#include "formats/tfjs/builder.h"

namespace tandem::tfjs {

// Applies activation `act` ("Relu", "Relu6", "Elu", "Selu", "LeakyRelu",
// "Sigmoid", "Tanh", "Prelu") to x. `alpha` is PRelu's slope value (already
// in x's form), `leaky_alpha` LeakyRelu's slope. Error::unsupported for others.
ValueId emit_activation(Builder& b, const TfNode& n, const std::string& act, ValueId x,
                        ValueId alpha = kNoValue, float leaky_alpha = 0.2f);

bool is_activation(const std::string& op);

}  // namespace tandem::tfjs
