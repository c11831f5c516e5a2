#pragma once
// The one kernel behind Slice and Pad on CUDA, like cpu/index_copy.h on the
// CPU: an output filled element by element from an input through one table
// of element offsets per output dim (in memory order),
//   out[o_0, ..., o_n-1] = in[table_0[o_0] + ... + table_n-1[o_n-1]],
// or the fill element where any entry is -1 (Pad's border). The tables are
// uploaded once at prepare; any dtype, moved as raw words.
#include <cstdint>
#include <functional>

#include "core/backend.h"
#include "cuda/context.h"

namespace tandem::cuda {

// Input index along logical dim d that output index o reads, or -1 for the
// fill element.
using SourceIndex = std::function<int64_t(size_t d, int64_t o)>;

// The plan of an index copy of op's input 0 into output 0 (shape `out`):
// plain, or nhwc when a 4-D input arrives nhwc (the tables then follow the
// memory order, so no reorder is needed). The fill is read from input
// `fill_input` on the device when it is >= 0, else it is `fill_bits` (the
// element's bits).
KernelPlan index_copy_plan(const OpDesc& op, Context& c, const Shape& out,
                           const SourceIndex& source, uint64_t fill_bits = 0, int fill_input = -1);

}  // namespace tandem::cuda
