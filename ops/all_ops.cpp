#include "ops/all_ops.h"

namespace tandem::ops {

void register_all_schemas() {
  register_elementwise_schemas();
  register_reorder_schema();
}

}  // namespace tandem::ops
