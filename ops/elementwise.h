#pragma once
// Unary activations and broadcasting binary arithmetic.
#include <optional>
#include <string>

#include "core/backend.h"
#include "ops/activation.h"

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
// Whether Dropout with these constant inputs (null: absent) passes its
// input through: no training_mode, a false one, or a ratio of 0.
bool dropout_passes_through(const Tensor* ratio, const Tensor* training_mode);

// The activation a standalone op computes (Relu, LeakyRelu, Sigmoid, Tanh,
// HardSwish, HardSigmoid, Elu, Softplus, Clip with its bounds as attributes
// or constant inputs), with ONNX's defaults; nullopt for other op types.
// Clip bounds that are not constants are Error::unsupported, like any op
// a kernel lacks.
std::optional<Activation> activation_of(const OpDesc& op);

// Training's add: the larger of two same-rank shapes of which one broadcasts
// to the other (extents equal, or 1 in the smaller one).
Shape add_output_shape(const Shape& a, const Shape& b);
// Whether sum_to can sum `src` to `dst`: same rank, each extent equal or 1.
bool sums_to(const Shape& src, const Shape& dst);
// Whether a tensor of this shape has the same bytes in plain and nhwc layout
// ([N, C, 1, 1]: a pooled activation, a channel bias), so either
// description serves without a copy.
bool layout_free(const Shape& s);

}  // namespace tandem::ops
