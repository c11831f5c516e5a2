#pragma once
// Every op family's registration function, called once by ops/schema.cpp.
// Explicit calls instead of static initializers: a static library would let
// the linker drop self-registering objects.
namespace tandem::ops {

void register_elementwise_schemas();  // ops/elementwise.cpp
void register_reorder_schema();       // ops/reorder.cpp
void register_reshape_schemas();      // ops/reshape.cpp
void register_gather_schema();        // ops/gather.cpp
void register_constant_schemas();     // ops/constant.cpp
void register_transpose_schema();     // ops/transpose.cpp
void register_slice_schemas();        // ops/slice.cpp
void register_cast_schemas();         // ops/cast.cpp
void register_broadcast_schemas();    // ops/broadcast.cpp
void register_pad_schema();           // ops/pad.cpp
void register_reduce_schemas();       // ops/reduce.cpp
void register_conv_schemas();         // ops/conv.cpp
void register_gemm_schemas();         // ops/gemm.cpp
void register_norm_schemas();         // ops/norm.cpp
void register_pool_schemas();         // ops/pool.cpp
void register_softmax_schemas();      // ops/softmax.cpp
void register_concat_schema();        // ops/concat.cpp
void register_scatter_schema();       // ops/scatter.cpp
void register_resize_schemas();       // ops/resize.cpp
void register_topk_schema();          // ops/topk.cpp
void register_quantize_schemas();     // ops/quantize.cpp
void register_all_schemas();

}  // namespace tandem::ops
