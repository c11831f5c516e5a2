#pragma once
// Every op family's schema registration, register_<family>_schemas() in
// ops/<family>.cpp, declared from the family list (ops/op_families.cmake)
// and called once by ops/schema.cpp. Explicit calls instead of static
// initializers: a static library would let the linker drop
// self-registering objects.
namespace tandem::ops {

#define TANDEM_OP_FAMILY(family) void register_##family##_schemas();
#include "tandem_ops_op_families.inc"
#undef TANDEM_OP_FAMILY

void register_all_schemas();

}  // namespace tandem::ops
