#pragma once
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool (ONNX opsets 11-17).
//   X [N, C, D1..Dk] -> Y [N, C, O1..Ok] (Global*: every O is 1)
// MaxPool's optional second output (Indices, int64) is described here;
// backends may reject it.
#include <string>

#include "core/attributes.h"
#include "core/shape.h"
#include "ops/spatial.h"

namespace tandem::ops {

enum class PoolKind { max, average };

struct PoolParams {
  PoolKind kind = PoolKind::max;
  bool global = false;
  bool count_include_pad = false;  // AveragePool only
  Window window;                   // for Global*: kernel = whole spatial extent
};

bool is_pool(const std::string& op_type);
PoolParams pool_params(const std::string& op_type, const Attributes& attrs, const Shape& x);

}  // namespace tandem::ops
