#include "ops/quant_channels.h"

#include <string>

namespace tandem::ops {

QuantChannels quant_channels(const Shape& shape, int64_t axis, const ErrorContext& where) {
  QuantChannels v;
  const int64_t rank = int64_t(shape.size());
  if (axis < 0) {
    for (int64_t d : shape) v.inner *= d;
    return v;
  }
  check(axis < rank, "axis " + std::to_string(axis) + " out of range for " + shape_str(shape),
        where);
  for (int64_t i = 0; i < axis; ++i) v.outer *= shape[size_t(i)];
  v.channels = shape[size_t(axis)];
  for (int64_t i = axis + 1; i < rank; ++i) v.inner *= shape[size_t(i)];
  return v;
}

}  // namespace tandem::ops
