#include "ops/all_ops.h"

namespace tandem::ops {

void register_all_schemas() {
  register_elementwise_schemas();
  register_reorder_schema();
  register_reshape_schemas();
  register_gather_schema();
  register_constant_schemas();
  register_transpose_schema();
  register_slice_schemas();
  register_cast_schemas();
  register_broadcast_schemas();
  register_pad_schema();
  register_reduce_schemas();
  register_conv_schemas();
  register_gemm_schemas();
  register_norm_schemas();
  register_pool_schemas();
  register_softmax_schemas();
  register_concat_schema();
  register_scatter_schema();
  register_resize_schemas();
  register_topk_schema();
  register_quantize_schemas();
}

}  // namespace tandem::ops
