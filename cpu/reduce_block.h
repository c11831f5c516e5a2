#pragma once
// The fast path of ReduceSum/Mean/Max/Min for f32, f16 and bf16 when the reduced axes are
// one contiguous block of the input (cpu/reduce.cpp falls back to its
// generic walk otherwise).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"
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

bool reduce_block_supports(DType t);

// y[outer * inner] = reduction of x over extent, both of dtype t (one that
// reduce_block_supports); NaN propagates.
void reduce_block(BlockReduction r, const BlockShape& s, DType t, const void* x, void* y);

}  // namespace tandem::cpu
