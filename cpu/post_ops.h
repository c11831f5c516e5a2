#pragma once
// Activations (ops/activation.h) as oneDNN eltwise steps: the standalone
// activation ops, the ones fused into a producer (FusedConv, FusedGemm) as
// post-ops, and training's activation entries all map a kind here, once.
#include <dnnl.hpp>
#include <string>
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

// `a`'s steps as eltwise primitives to run one after the other in place on
// `data` (SRC and DST the same memory): the activation apart from the
// primitive it would be fused into, where that fusion cannot be trusted.
std::vector<dnnl::primitive> activation_in_place(const dnnl::memory::desc& data,
                                                 const ops::Activation& a);

// Whether a fused activation post-op of `a` on a primitive whose
// implementation oneDNN names `impl` ("jit:sve_512") can be trusted.
// oneDNN before 3.0 saved and restored the wrong vector registers around
// an eltwise post-op in its SVE JIT kernels (fixed upstream in November
// 2022: "aarch64: eltwise: fix preserved Z register indices" and "fix
// push/pop Z register size"): on SVE-512 (an emulated A64FX, and qemu's
// `max` CPU) a convolution's fused Clip or HardSwish came out unclipped.
// Those two, and HardSigmoid (a clip), are distrusted there; the other
// activations' fused forms were right there, bit for bit what the
// standalone eltwise gives (which a separate primitive on the blocked
// output was not, for Sigmoid), and stay fused.
// TANDEM_CPU_UNFUSED_ACTIVATIONS=1 distrusts every activation but ReLU on
// any CPU (to rule a post-op out when a result looks wrong).
bool fused_activation_trusted(const std::string& impl, const ops::Activation& a);

}  // namespace tandem::cpu
