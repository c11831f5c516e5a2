#pragma once
// Depthwise 2-D convolution (Conv or tandem.FusedConv with group == C == M)
// on the CUDA backend's own kernel instead of cuDNN (cuda/depthwise_conv.cu):
//   X [N, C, H, W] (nhwc) * W [C, 1, R, S] (constant) -> Y [N, C, P, Q] (nhwc)
//   FusedConv: Y = act(conv(X) + B + R), B [C], R like Y (nhwc).
#include "core/backend.h"
#include "cuda/context.h"

namespace tandem::cuda {

// True when make_depthwise_conv takes `op`: a 4-D Conv or FusedConv with
// group == C == M, constant plain weights and X of f32, f16 or bf16 (the
// weights' dtype too), non-empty, Y under 2^31 elements. cuda/conv.cpp
// sends these here and everything else to cuDNN.
bool is_depthwise_conv(const OpDesc& op);

// Throws ErrorKind::unsupported for an op is_depthwise_conv rejects.
KernelPlan make_depthwise_conv(const OpDesc& op, Context& c);

}  // namespace tandem::cuda
