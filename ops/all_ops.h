#pragma once
// Every op family's registration function, called once by ops/schema.cpp.
// Explicit calls instead of static initializers: a static library would let
// the linker drop self-registering objects.
namespace tandem::ops {

void register_elementwise_schemas();  // ops/elementwise.cpp
void register_reorder_schema();       // ops/reorder.cpp
void register_conv_schemas();         // ops/conv.cpp
void register_gemm_schemas();         // ops/gemm.cpp
void register_norm_schemas();         // ops/norm.cpp
void register_pool_schemas();         // ops/pool.cpp
void register_softmax_schemas();      // ops/softmax.cpp
void register_concat_schema();        // ops/concat.cpp
void register_all_schemas();

}  // namespace tandem::ops
