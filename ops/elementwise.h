#pragma once
// Unary activations and broadcasting binary arithmetic.
#include <string>

#include "core/backend.h"

namespace tandem::ops {

// Unary ops whose output has the input's dtype and shape.
bool is_unary_activation(const std::string& op_type);
// Add, Sub, Mul, Div, Pow, Max, Min (numpy broadcasting).
bool is_binary_arithmetic(const std::string& op_type);

// Gelu's `approximate` attribute (opset 20): false for "none" (the erf
// form, the default), true for "tanh"; throws Error for anything else.
bool gelu_uses_tanh(const Attributes& attrs);

// Dropout as inference runs it: output 0 is the input, the optional mask
// (output 1) all true. Throws Error::unsupported for training-mode Dropout
// (random masks) and for a ratio or training_mode only known at run time.
void check_inference_dropout(const OpDesc& op);

}  // namespace tandem::ops
