#pragma once
// One oneDNN eltwise primitive over a whole tensor, shared by the activation
// kernels and by Pow with a scalar exponent.
#include <dnnl.hpp>

#include "core/backend.h"

namespace tandem::cpu {

// y = f(x) elementwise for x as described (its layout is kept); `post`
// optional post-ops (e.g. a clip after a linear). Inputs beyond the first
// keep plain layout in the plan.
KernelPlan eltwise_kernel(const TensorDesc& x, dnnl::algorithm f, float alpha, float beta,
                          const dnnl::post_ops* post = nullptr, size_t num_inputs = 1);

}  // namespace tandem::cpu
