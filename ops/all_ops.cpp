#include "ops/all_ops.h"

namespace tandem::ops {

void register_all_schemas() {
#define TANDEM_OP_FAMILY(family) register_##family##_schemas();
#include "tandem_ops_op_families.inc"
#undef TANDEM_OP_FAMILY
}

}  // namespace tandem::ops
