#pragma once
// Optimizer arithmetic on GPU tensors (f32, plain, one GPU per call): the
// per-element rules of core/update_rules.h, the very operations the CPU
// loops run, so a step on the GPU gives the CPU's bits. Kernels are enqueued
// on the GPU's stream; the calls that return a value wait for it.
#include <span>

#include "core/tensor.h"
#include "core/update_rules.h"

namespace tandem::cuda {

// One SGD step over a parameter; `buf` is undefined without momentum.
void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdScalars& s);
// One AdamW step over a parameter and its two moment estimates.
void adamw_step(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWScalars& s);
// grad *= inv_scale for every tensor (the loss scaler's unscale); true if any
// value was inf or nan before scaling. One kernel per tensor, one wait.
bool unscale_gradients(std::span<const Tensor> grads, float inv_scale);
// Sum of the squares of every value, accumulated in double in a fixed order
// (the same result on every run). Waits for the stream.
double sum_of_squares(std::span<const Tensor> tensors);
// t *= factor for every tensor (gradient clipping).
void scale_tensors(std::span<const Tensor> tensors, float factor);

}  // namespace tandem::cuda
