#pragma once
// Optimizer arithmetic on GPU tensors (f32, plain, one GPU per call): the
// per-element rules of ops/update_rules.h, the very operations the CPU
// loops run, so a step on the GPU gives the CPU's bits. Kernels are enqueued
// on the GPU's stream; the calls that return a value wait for it.
#include <span>
#include <vector>

#include "core/tensor.h"
#include "ops/update_rules.h"

namespace tandem::cuda {

// Parameters of one GPU updated together, element i of each list belonging
// to parameter i: a multi-tensor kernel updates up to 24 of them per launch
// (a small model's step was mostly per-parameter launch cost).
struct ParamGroup {
  std::vector<Tensor> param, grad;
  std::vector<Tensor> a, b;  // SGD: a the momentum buffer (undefined without); AdamW: a = m, b = v
};
// One SGD step over every parameter of the group.
void sgd_steps(const ParamGroup& g, const ops::SgdScalars& s);
// One AdamW step over every parameter of the group and its moment estimates.
void adamw_steps(const ParamGroup& g, const ops::AdamWScalars& s);
// grad *= inv_scale for every tensor (the loss scaler's unscale); true if any
// value was inf or nan before scaling. One kernel per 24 tensors, one wait.
bool unscale_gradients(std::span<const Tensor> grads, float inv_scale);
// Sum of the squares of every value, accumulated in double in a fixed order
// (the same result on every run). Waits for the stream.
double sum_of_squares(std::span<const Tensor> tensors);
// Every value of every tensor set to 0 (zero_grad), 24 tensors per launch.
void zero_tensors(std::span<const Tensor> tensors);
// t *= factor for every tensor (gradient clipping).
void scale_tensors(std::span<const Tensor> tensors, float factor);

}  // namespace tandem::cuda
