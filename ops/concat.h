#pragma once
// Concat (ONNX opsets 11-17): inputs of one dtype and rank, equal except
// along `axis` (required, may be negative); any dtype.
#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

// Normalized axis; throws Error when missing or out of range.
int64_t concat_axis(const Attributes& attrs, int64_t rank);

}  // namespace tandem::ops
