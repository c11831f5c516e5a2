#pragma once
// The training kernels of one device, as one table of function pointers (in
// the spirit of ggml's backend tables). train/ picks the table from a
// tensor's Device and calls through it; the CPU and CUDA backends fill the
// tables (cpu/train_table.cpp, cuda/train_table.cpp) from the same op files
// as their inference kernels. The entries take the op vocabulary of ops/
// (parameters, shape rules), the same one imported models' kernels use.
//
// Conventions, for every entry:
//  - `ctx` is the table's own state (the CPU keeps its oneDNN primitive cache
//    there; a GPU would keep its stream and library handles). Pass table.ctx.
//  - Tensors live on the table's device, plain (row-major) layout, f32
//    (labels i64). A table with keeps_16bit_activations also takes f16 and
//    bf16 activations and their gradients (one dtype per call; parameters,
//    statistics and the loss stay f32); one with takes_nhwc_activations
//    takes 4-D activations in layout nhwc (channels last, the shape still
//    [N, C, H, W]) in conv2d, batch norm, layer norm over the channels,
//    pooling, the element-wise entries, add, sum_to, concat, dropout and
//    cast. Other dtypes and layouts are Error::unsupported, so callers
//    never get a silent conversion.
//  - The caller allocates outputs with the same shapes the *_shape()
//    functions below give (empty()); the kernel writes every element.
//    A shape that does not fit is an Error naming the entry and the shape.
//  - State a forward keeps for its backward (batch statistics, the max-pool
//    workspace, the dropout mask, the log-probabilities) is allocated by the
//    forward into `saved`; it is opaque: only the same table's backward reads it.
//  - Each gradient a backward writes is a GradOut: undefined = not wanted;
//    overwrite replaces its contents, accumulate adds to them.
//  - Optional tensors (bias) are passed undefined when absent.
#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/concat.h"
#include "ops/conv.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fake_quant.h"
#include "ops/gemm.h"
#include "ops/loss.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/qconv.h"

namespace tandem {

enum class GradMode : uint8_t { overwrite, accumulate };

struct GradOut {
  Tensor t;  // undefined: the caller does not want this gradient
  GradMode mode = GradMode::overwrite;
  bool wanted() const { return t.defined(); }
};

// What every table's entries check and report: the entry's name and a
// tensor's shape as the error context; a tensor's shape against the one the
// entry needs (`what` names it in the message).
ErrorContext op_context(const char* op, const Tensor& t);
void require_shape(const char* op, const Tensor& t, const Shape& want, const char* what);

struct TrainBackend {
  const char* name;
  void* ctx;

  // Whether conv2d under autocast stores y in its 16-bit compute dtype and
  // the other activation entries take it (f16/bf16 end to end, as PyTorch's
  // CUDA autocast), instead of f32 activations with 16-bit multiplies.
  bool keeps_16bit_activations;
  // Whether the activation entries take nhwc tensors (see Conventions).
  bool takes_nhwc_activations;

  // Memory on this device. Contents of empty() are undefined.
  Tensor (*empty)(void* ctx, DType dtype, const Shape& shape);
  void (*fill)(void* ctx, const Tensor& t, float value);
  // dst = src converted to dst's dtype (rounded to nearest even) and
  // layout (plain <-> nhwc), or dst += src so converted (accumulating); same
  // shape: autocast's precision changes and channels-last's layout ones.
  void (*cast)(void* ctx, const Tensor& src, const GradOut& dst);

  // Conv2d. x [N, C, H, W], w [M, C/groups, KH, KW], b [M] (optional)
  //   -> y [N, M, OH, OW] (ops::conv2d_output_shape).
  void (*conv2d_forward)(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w,
                         const Tensor& b, const Tensor& y);
  // dy [N, M, OH, OW] -> dx like x, dw like w, db [M].
  void (*conv2d_backward)(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w,
                          const Tensor& dy, const GradOut& dx, const GradOut& dw, const GradOut& db);

  // Linear: y [N, M] = x [N, K] · w [M, K]ᵀ + b [M] (optional).
  void (*linear_forward)(void* ctx, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y);
  // dy [N, M] -> dx [N, K], dw [M, K], db [M].
  void (*linear_backward)(void* ctx, const Tensor& x, const Tensor& w, const Tensor& dy,
                          const GradOut& dx, const GradOut& dw, const GradOut& db);

  // BatchNorm over channel axis 1 of x [N, C, ...] -> y like x; gamma, beta,
  // running_mean, running_var [C]. Training: normalizes with the batch mean
  // and biased variance, then updates the running statistics in place
  // (variance unbiased, as PyTorch). Eval: normalizes with the running ones.
  void (*batch_norm_forward)(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& y, Tensor* saved);
  // dy like x -> dx like x, dgamma [C], dbeta [C] (saved: from the forward,
  // which must have had the same params.training).
  void (*batch_norm_backward)(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& saved, const Tensor& dy, const GradOut& dx,
                              const GradOut& dgamma, const GradOut& dbeta);

  // Optional (null when the backend has none): y = relu(batch_norm(x) + z)
  // in one pass, z (undefined when absent) like x: a ResNet block's
  // BN-ReLU and BN-add-ReLU without their intermediate tensors. Returns
  // false, having written nothing, when it does not take the call (eval
  // mode, a dtype, layout or shape its kernels lack); the caller then
  // composes the three ops.
  bool (*batch_norm_relu_forward)(void* ctx, const ops::BatchNormParams& p, const Tensor& x,
                                  const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& y, Tensor* saved) = nullptr;
  // dy like y -> dx, dz like x, dgamma, dbeta [C], from the forward's x, z,
  // y, beta and saved state.
  void (*batch_norm_relu_backward)(void* ctx, const ops::BatchNormParams& p, const Tensor& x,
                                   const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                   const Tensor& y, const Tensor& saved, const Tensor& dy,
                                   const GradOut& dx, const GradOut& dz, const GradOut& dgamma,
                                   const GradOut& dbeta) = nullptr;

  // Layer norm: x viewed as [rows, cols, inner] (p: ops::layernorm_params's
  // training form), each of its rows * inner vectors of cols values
  // normalized with its own mean and biased variance, then scaled by gamma
  // [cols] and shifted by beta [cols] (optional) -> y like x. Statistics in
  // f32 whatever x's dtype. saved: f32 [2, rows * inner], each vector's mean
  // and 1 / sqrt(var + epsilon). Null in a table without the op.
  void (*layer_norm_forward)(void* ctx, const ops::LayerNormParams& p, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, const Tensor& y, Tensor* saved) = nullptr;
  // dy like x -> dx like x, dgamma [cols], dbeta [cols] (f32).
  void (*layer_norm_backward)(void* ctx, const ops::LayerNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& saved, const Tensor& dy, const GradOut& dx, const GradOut& dgamma,
                              const GradOut& dbeta) = nullptr;

  // Activation, element-wise: x (any shape) -> y like x.
  void (*eltwise_forward)(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& y);
  // dy like x -> dx like x (from x, not y).
  void (*eltwise_backward)(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& dy,
                           const GradOut& dx);

  // Max or average pooling: x [N, C, H, W] -> y [N, C, OH, OW] (ops::pool2d_output_shape).
  // saved: the max-pool workspace (the argmax); undefined for average pooling.
  void (*pool2d_forward)(void* ctx, const ops::Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved);
  // dy [N, C, OH, OW] -> dx [N, C, H, W] (its shape tells x's).
  void (*pool2d_backward)(void* ctx, const ops::Pool2dParams& p, const Tensor& saved, const Tensor& dy,
                          const GradOut& dx);

  // y = a + b, same rank; one of a, b has y's shape (ops::add_output_shape), the
  // other broadcasts along its extents of 1 (a residual, a bias).
  void (*add_forward)(void* ctx, const Tensor& a, const Tensor& b, const Tensor& y);
  // dst = src summed over the axes where dst has extent 1 (same rank): add's
  // backward; with equal shapes, a copy (or, accumulating, dst += src).
  void (*sum_to)(void* ctx, const Tensor& src, const GradOut& dst);

  // Concatenation of xs along `axis` -> y (ops::concat_output_shape).
  void (*concat_forward)(void* ctx, int64_t axis, std::span<const Tensor> xs, const Tensor& y);
  // dy -> dxs[i], the slice of dy along `axis` of extent extents[i].
  void (*concat_backward)(void* ctx, int64_t axis, const Tensor& dy, std::span<const int64_t> extents,
                          std::span<const GradOut> dxs);

  // Inverted dropout: y = x * keep / (1 - p), keep ~ Bernoulli(1 - p), a
  // function of (p.seed, element index): the same on every device and run.
  // saved: the keep mask.
  void (*dropout_forward)(void* ctx, const ops::DropoutParams& p, const Tensor& x, const Tensor& y, Tensor* saved);
  // dy like x -> dx like x.
  void (*dropout_backward)(void* ctx, const ops::DropoutParams& p, const Tensor& saved, const Tensor& dy,
                           const GradOut& dx);

  // Softmax cross-entropy: logits [N, K], labels i64 [N] in [0, K) (else
  // Error) -> loss [] = mean over the batch of -sum_k target_k log softmax_k.
  // saved: the log-probabilities [N, K].
  void (*cross_entropy_forward)(void* ctx, const ops::CrossEntropyParams& p, const Tensor& logits,
                                const Tensor& labels, const Tensor& loss, Tensor* saved);
  // dloss [] -> dlogits [N, K].
  void (*cross_entropy_backward)(void* ctx, const ops::CrossEntropyParams& p, const Tensor& saved,
                                 const Tensor& labels, const Tensor& dloss, const GradOut& dlogits);

  // Quantization-aware training. x any shape; scale f32 and zero_point i64,
  // [1] per tensor or [x.shape[axis]] per channel (on this device or the
  // host) -> y like x.
  // saved: u8 [numel], 1 where x fell inside the integer range.
  void (*fake_quant_forward)(void* ctx, const ops::FakeQuantParams& p, const Tensor& x, const Tensor& scale,
                             const Tensor& zero_point, const Tensor& y, Tensor* saved);
  // Straight-through estimator: dx = dy where x was in range, else 0.
  void (*fake_quant_backward)(void* ctx, const Tensor& saved, const Tensor& dy, const GradOut& dx);
  // Minimum and maximum of x: over everything (axis -1; min/max [1]) or per
  // index of `axis` (min/max [x.shape[axis]]); f32 outputs on this device.
  void (*min_max)(void* ctx, const Tensor& x, int64_t axis, const Tensor& min, const Tensor& max);

  // Optional (null where the backend has no integer convolution): Conv2d's
  // forward on 8-bit integers for quantization-aware training, whose x and
  // w come out of fake quantizers: x f32 [N, C, H, W] on the u8 grid of
  // (q.x_scale, q.x_zero_point), w f32 [M, C/G, KH, KW] on the symmetric i8
  // grid of q.w_scales (M values), b f32 [M] (optional) -> y f32 [N, M, OH,
  // OW] = conv(x, w) + b, the sums exact in int32. Returns false, having
  // written nothing, when a value of x or w is off its grid (the caller
  // then runs conv2d_forward). q's output, residual and activation fields
  // stay at their defaults.
  bool (*qconv2d_forward)(void* ctx, const ops::Conv2dParams& p, const ops::QConvParams& q,
                          const Tensor& x, const Tensor& w, const Tensor& b,
                          const Tensor& y) = nullptr;
};

}  // namespace tandem
