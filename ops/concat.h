#pragma once
// Concat (ONNX opsets 11-17): inputs of one dtype and rank, equal except
// along `axis` (required, may be negative); any dtype.
#include <span>

#include "core/attributes.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace tandem::ops {

// Normalized axis; throws Error when missing or out of range.
int64_t concat_axis(const Attributes& attrs, int64_t rank);

// Training's concatenation of xs along `axis`; throws Error when ranks or
// extents off the axis differ.
Shape concat_output_shape(std::span<const Tensor> xs, int64_t axis);

// Concatenation along `axis` of a y of shape `y` as block copies: each input
// is `outer` rows of (its extent along the axis) * inner contiguous values,
// at an offset within each of y's rows of `row` values.
struct ConcatBlocks {
  int64_t outer = 1, inner = 1, row = 0;
};
ConcatBlocks concat_blocks(const Shape& y, int64_t axis);

}  // namespace tandem::ops
