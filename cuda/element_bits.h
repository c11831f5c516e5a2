#pragma once
// A host value as one device element: the fill a kernel writes where an op
// has no source element (Resize's extrapolation value, Pad-2's `value`).
#include <cstdint>

#include "core/dtype.h"

namespace tandem::cuda {

// `v` converted to dtype `t` as Cast converts it (integers saturate, NaN
// gives 0, f16 and bf16 round to nearest even), as the element's bits in
// the low dtype_size(t) bytes.
uint64_t element_bits(DType t, double v);

}  // namespace tandem::cuda
