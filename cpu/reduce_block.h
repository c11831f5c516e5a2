#pragma once
// The fast path of ReduceSum/Mean/Max/Min for f32 when the reduced axes are
// one contiguous block of the input (cpu/reduce.cpp falls back to its
// generic walk otherwise).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/shape.h"

namespace tandem::cpu {

enum class BlockReduction { sum, mean, max, min };

// The input seen as [outer, extent, inner], reduced along extent.
struct BlockShape {
  int64_t outer = 1, extent = 1, inner = 1;
};

// The [outer, extent, inner] view of `in` when the reduced dims (extent-1
// dims aside) are adjacent; nullopt otherwise or when nothing is reduced.
std::optional<BlockShape> block_shape(const Shape& in, const std::vector<bool>& reduced);

// y[outer * inner] = reduction of x over extent; NaN propagates.
void reduce_block(BlockReduction r, const BlockShape& s, const float* x, float* y);

}  // namespace tandem::cpu
