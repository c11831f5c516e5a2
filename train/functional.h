#pragma once
// Differentiable ops on Vars: each runs its forward kernel on the device
// table of its inputs (train/backend.h) and records its backward on the tape
// (train/autograd.h) when grad mode is on and an input requires a gradient.
// Tensors are plain and f32, or f16/bf16 activations under autocast on a
// table that keeps them (conv2d's output, then every op that follows keeps
// its input's dtype; linear, cross_entropy and fake_quantize widen to f32
// first), and 4-D activations may be nhwc on a table that takes it (an op's
// output keeps its input's layout; reshape, linear and the loss read plain
// tensors); shapes as in ops/train_backend.h. An absent optional input (a
// bias) is an undefined Var.
#include <span>

#include "ops/train_backend.h"
#include "train/autograd.h"

namespace tandem::train {

// x [N, C, H, W], w [M, C/groups, KH, KW], b [M] -> [N, M, OH, OW].
Var conv2d(const Var& x, const Var& w, const Var& b, const ops::Conv2dParams& p = {});
// x [N, K], w [M, K], b [M] -> x·wᵀ + b [N, M].
Var linear(const Var& x, const Var& w, const Var& b);
// x [N, C, ...]; gamma, beta, running statistics [C]. Training updates the
// running statistics in place.
Var batch_norm(const Var& x, const Var& gamma, const Var& beta, const Tensor& running_mean,
               const Tensor& running_var, const ops::BatchNormParams& p);

// relu(batch_norm(x) + residual), residual optional (undefined): one fused
// op where the backend has one for the call (cuDNN's BN-add-ReLU on nhwc
// f16), else the three ops composed; the same values and gradients.
Var batch_norm_relu(const Var& x, const Var& gamma, const Var& beta, const Tensor& running_mean,
                    const Tensor& running_var, const ops::BatchNormParams& p,
                    const Var& residual = Var());

// x normalized over its extents [axis, end) (ops::layernorm_params), each
// position of the other extents on its own, times gamma plus beta (optional),
// both of the normalized extents' product: nn.LayerNorm over the last axis
// (end = rank), LayerNorm2d over the channels of [N, C, H, W] (axis 1, end 2).
// x keeps its dtype and layout; statistics are f32.
Var layer_norm(const Var& x, const Var& gamma, const Var& beta, int64_t axis, int64_t end, float epsilon = 1e-5f);

Var activation(const Var& x, const ops::Activation& p);
Var relu(const Var& x);
Var leaky_relu(const Var& x, float negative_slope = 0.01f);
Var silu(const Var& x);
Var hardswish(const Var& x);
Var sigmoid(const Var& x);
Var tanh(const Var& x);
// nn.GELU(): x/2 * (1 + erf(x / sqrt 2)); approximate="tanh" with `tanh`.
Var gelu(const Var& x, bool tanh = false);

// x [N, C, H, W] -> [N, C, OH, OW].
Var pool2d(const Var& x, const ops::Pool2dParams& p);
ops::Pool2dParams max_pool_params(int64_t kernel, int64_t stride, int64_t padding = 0, int64_t dilation = 1);
ops::Pool2dParams avg_pool_params(int64_t kernel, int64_t stride, int64_t padding = 0, bool count_include_pad = true);
// x [N, C, H, W] -> the mean of each plane, [N, C, 1, 1].
Var global_avg_pool2d(const Var& x);

// x converted to `dtype` (f32, f16, bf16) and `layout` (plain, or nhwc for
// 4-D x on a table that takes it); x itself when it has both, a view when
// only the layout changes and the bytes read the same (ops::layout_free). The
// gradient is converted back to x's dtype and layout.
Var convert(const Var& x, DType dtype, Layout layout);
inline Var cast(const Var& x, DType dtype) { return convert(x, dtype, x.value().layout()); }
inline Var to_f32(const Var& x) { return cast(x, DType::f32); }
inline Var to_layout(const Var& x, Layout layout) { return convert(x, x.value().dtype(), layout); }

// a + b; one has the result's shape, the other broadcasts (same rank).
Var add(const Var& a, const Var& b);
Var concat(std::span<const Var> xs, int64_t axis = 1);
// Same values, new shape (same element count).
Var reshape(const Var& x, const Shape& shape);
// [N, d1, d2, ...] -> [N, d1 * d2 * ...] from start_dim on.
Var flatten(const Var& x, int64_t start_dim = 1);
// Identity unless training (and p > 0).
Var dropout(const Var& x, float p, uint64_t seed, bool training);

// Quantization-aware training: x rounded to the integer grid of
// (scale, zero_point) and back (ops/fake_quant.h); the gradient passes
// where x was in range (straight-through estimator). scale/zero_point live
// on the host, [1] or [x.shape[p.axis]].
Var fake_quantize(const Var& x, const Tensor& scale, const Tensor& zero_point, const ops::FakeQuantParams& p);

// logits [N, K], labels i64 [N] -> the mean softmax cross-entropy [].
// labels_checked: see ops::CrossEntropyParams (check_labels did it on the host).
Var cross_entropy(const Var& logits, const Tensor& labels, float label_smoothing = 0, bool labels_checked = false);
// Error unless every label of host i64 `labels` is in [0, classes), naming
// the first that is not (as the kernels' own check words it).
void check_labels(const Tensor& labels, int64_t classes);

}  // namespace tandem::train
