#pragma once
// oneDNN post-ops for activations fused into a producer (FusedConv,
// FusedGemm), and the tuning switches the compute kernels read.
#include <dnnl.hpp>

#include "ops/activation.h"

namespace tandem::cpu {

// Appends `a` as eltwise post-op(s); HardSigmoid needs two (linear, clip).
void append_activation(dnnl::post_ops& po, const ops::FusedActivation& a);

}  // namespace tandem::cpu
