#pragma once
// How fake quantization and the observers' min/max index channels: a plain
// tensor viewed as [outer, channels, inner] around the quantization axis
// (axis -1: one channel over every element), the same on every backend.
#include <cstdint>

#include "core/error.h"
#include "core/shape.h"

namespace tandem::ops {

struct QuantChannels {
  int64_t outer = 1, channels = 1, inner = 1;
};

// Error (with `where`) for an axis past the shape's rank.
QuantChannels quant_channels(const Shape& shape, int64_t axis, const ErrorContext& where);

}  // namespace tandem::ops
