#pragma once
// QuantizeLinear / DequantizeLinear (opset 13): the axis their scale and zero
// point apply along, shared by the schemas and the kernels.
#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

// x viewed as [outer, channels, inner]: per tensor (a scale of one value)
// channels is 1 and inner all of x; per axis the scale is 1-D with x's
// extent on `axis`.
struct QuantAxis {
  int64_t outer = 1, channels = 1, inner = 1;
};

// Checks the scale (and zero point, if given) against x; Error otherwise.
QuantAxis quant_axis(const Attributes& a, const Shape& x, const Shape& scale, const Shape* zero_point);

}  // namespace tandem::ops
