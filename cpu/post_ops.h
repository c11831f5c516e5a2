#pragma once
// Activations (ops/activation.h) as oneDNN eltwise steps: the standalone
// activation ops, the ones fused into a producer (FusedConv, FusedGemm) as
// post-ops, and training's activation entries all map a kind here, once.
#include <dnnl.hpp>

#include <vector>

#include "ops/activation.h"

namespace tandem::cpu {

// y = scale * f(x; alpha, beta), f one of oneDNN's eltwise algorithms.
struct EltwiseStep {
  dnnl::algorithm algorithm;
  float alpha = 0.f, beta = 0.f, scale = 1.f;
};

// The steps computing `a`, in order: none has none, HardSigmoid two (linear,
// then clip), every other kind one.
std::vector<EltwiseStep> eltwise_steps(const ops::Activation& a);

// Appends `a`'s steps as eltwise post-ops.
void append_activation(dnnl::post_ops& po, const ops::Activation& a);

}  // namespace tandem::cpu
