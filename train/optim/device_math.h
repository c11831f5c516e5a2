#pragma once
// The optimizers' arithmetic on parameters that live on a GPU: the same
// per-element rules as the CPU loops (core/update_rules.h), run by the CUDA
// kernels of cuda/train/optimizer.h. Each call takes tensors of one GPU; a
// build without CUDA refuses them with Error::unsupported.
#include <span>
#include <vector>

#include "core/tensor.h"
#include "core/update_rules.h"
#include "train/parameter.h"

namespace tandem::train {

void sgd_step_on_device(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdScalars& s);
void adamw_step_on_device(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                          const AdamWScalars& s);
// grad *= inv_scale; true if any value was inf or nan. Waits for the GPU.
bool unscale_on_device(std::span<const Tensor> grads, float inv_scale);
// Sum of squares in double. Waits for the GPU.
double sum_of_squares_on_device(std::span<const Tensor> tensors);
void scale_on_device(std::span<const Tensor> tensors, float factor);

// The gradients of the parameters that live on GPUs, one list per GPU.
std::vector<std::vector<Tensor>> gpu_gradients(const ParameterList& params);

}  // namespace tandem::train
