#pragma once
// Unary activations and broadcasting binary arithmetic.
#include <string>

namespace tandem::ops {

// Unary ops whose output has the input's dtype and shape.
bool is_unary_activation(const std::string& op_type);
// Add, Sub, Mul, Div, Pow, Max, Min (numpy broadcasting).
bool is_binary_arithmetic(const std::string& op_type);

}  // namespace tandem::ops
