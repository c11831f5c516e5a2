#include "ops/all_ops.h"

namespace tandem::ops {

void register_all_schemas() {
  register_elementwise_schemas();
  register_reorder_schema();
  register_conv_schemas();
  register_gemm_schemas();
  register_norm_schemas();
  register_pool_schemas();
  register_softmax_schemas();
  register_concat_schema();
}

}  // namespace tandem::ops
