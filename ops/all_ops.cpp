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
  register_scatter_schema();
}

}  // namespace tandem::ops
