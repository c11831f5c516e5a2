#pragma once
// TopK: the k largest (or smallest) elements along one axis and their
// indices. Shared by shape inference and the backends' kernels.
#include <cstdint>

#include "ops/schema.h"

namespace tandem::ops {

struct TopKSpec {
  int64_t axis = 0;
  int64_t k = -1;  // -1 when K is not a constant
  bool largest = true;
  bool sorted = true;
};

// TopK-1 takes k as an attribute; TopK-10+ as a one-element int64 input.
TopKSpec topk_spec(const InferContext& c);

}  // namespace tandem::ops
