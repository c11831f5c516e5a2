// BatchNorm for training, kernels of our own: one block per channel computes
// that channel's statistics (two passes: the mean, then the mean squared
// deviation, so no cancellation) and normalizes it; the backward reduces
// sum(dy) and sum(dy * xhat) the same way and writes dx.
//   x / y / dy / dx [N, C, ...] (T), gamma / beta / running stats [C] (f32);
//   saved [2, C] f32: the mean and biased variance the forward normalized with
//   (the batch's in training, the running ones in eval), as the CPU table.
// Training updates the running statistics as PyTorch (and the CPU table):
// r = (1 - momentum) r + momentum * batch, the variance unbiased (n / (n - 1)).
//   training: dx = gamma / sigma * (dy - mean(dy) - xhat * mean(dy * xhat))
//   eval:     dx = gamma / sigma * dy
//   dgamma = sum(dy * xhat), dbeta = sum(dy), over N and the spatial axes.
// Parallelism is one block per channel: enough for a small CNN's 32-64
// channels to read at full speed per SM, not to fill an H200 (a split
// reduction would).
#include <algorithm>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/train/common.h"

namespace tandem::cuda::train {

namespace {

constexpr int kBlock = 512;

// x viewed as [N, C, S]: the flat position of value i of channel c.
struct ChannelWalk {
  int64_t n, c, s;
  __device__ __forceinline__ int64_t at(int64_t channel, int64_t i) const {
    int64_t b = i / s;
    return (b * c + channel) * s + (i - b * s);
  }
  __device__ __forceinline__ int64_t count() const { return n * s; }
};

struct ForwardArgs {
  const float *gamma, *beta;
  float *running_mean, *running_var, *saved;
  float eps, momentum;
  bool training;
};

template <typename T>
__global__ void __launch_bounds__(kBlock) forward_kernel(ChannelWalk w, const T* x, T* y, ForwardArgs a) {
  int64_t c = blockIdx.x, count = w.count();
  float mean, var;
  if (a.training) {
    float s = 0.f;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += load(x, w.at(c, i));
    mean = block_reduce(s, SumOp{}, 0.f) / float(count);
    float q = 0.f;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      float d = load(x, w.at(c, i)) - mean;
      q += d * d;
    }
    var = block_reduce(q, SumOp{}, 0.f) / float(count);
    if (threadIdx.x == 0) {
      float m = a.momentum;
      double unbias = double(count) / double(count - 1);
      a.running_mean[c] = (1 - m) * a.running_mean[c] + m * mean;
      a.running_var[c] = float((1 - m) * a.running_var[c] + m * var * unbias);
    }
  } else {
    mean = a.running_mean[c];
    var = a.running_var[c];
  }
  if (threadIdx.x == 0) {
    a.saved[c] = mean;
    a.saved[w.c + c] = var;
  }
  float scale = a.gamma[c] / sqrtf(var + a.eps), shift = a.beta[c];
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    int64_t k = w.at(c, i);
    store(y, k, (load(x, k) - mean) * scale + shift);
  }
}

struct BackwardArgs {
  const float *gamma, *saved;
  float eps;
  bool training;
  GradPtr dx, dgamma, dbeta;
};

__device__ __forceinline__ void put(const GradPtr& g, int64_t i, float v) {
  float* p = static_cast<float*>(g.p);
  p[i] = g.accumulate ? p[i] + v : v;
}

template <typename T>
__global__ void __launch_bounds__(kBlock) backward_kernel(ChannelWalk w, const T* x, const T* dy, BackwardArgs a) {
  int64_t c = blockIdx.x, count = w.count();
  float mean = a.saved[c], invstd = 1.f / sqrtf(a.saved[w.c + c] + a.eps);
  float sum_dy = 0.f, sum_dy_xhat = 0.f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    int64_t k = w.at(c, i);
    float g = load(dy, k);
    sum_dy += g;
    sum_dy_xhat += g * (load(x, k) - mean) * invstd;
  }
  sum_dy = block_reduce(sum_dy, SumOp{}, 0.f);
  sum_dy_xhat = block_reduce(sum_dy_xhat, SumOp{}, 0.f);
  if (threadIdx.x == 0) {
    if (a.dgamma.p) put(a.dgamma, c, sum_dy_xhat);
    if (a.dbeta.p) put(a.dbeta, c, sum_dy);
  }
  if (!a.dx.p) return;
  float scale = a.gamma[c] * invstd;
  float mean_dy = a.training ? sum_dy / float(count) : 0.f;
  float mean_dy_xhat = a.training ? sum_dy_xhat / float(count) : 0.f;
  T* dx = static_cast<T*>(a.dx.p);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    int64_t k = w.at(c, i);
    float xhat = (load(x, k) - mean) * invstd;
    float g = scale * (load(dy, k) - mean_dy - xhat * mean_dy_xhat);
    store(dx, k, a.dx.accumulate ? load(dx, k) + g : g);
  }
}

ChannelWalk walk(const Tensor& x) { return {x.dim(0), x.dim(1), x.numel() / (x.dim(0) * x.dim(1))}; }

void check_inputs(const TrainContext& c, const char* op, const Tensor& x,
                  std::initializer_list<const Tensor*> per_channel) {
  require_f32(c, op, {&x});
  check(x.rank() >= 2, "batch norm wants x [N, C, ...]", op_context(op, x));
  for (const Tensor* t : per_channel) {
    require_on_gpu(c, op, {t}, DType::f32);
    require_shape(op, *t, {x.dim(1)}, "a per-channel tensor");
  }
}

const float* f32(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* f32_mut(const Tensor& t) { return static_cast<float*>(t.raw()); }

}  // namespace

void batch_norm_forward(void* ctx, const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                        const Tensor& y, Tensor* saved) {
  const char* op = "batch_norm_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma, &beta, &running_mean, &running_var});
  require_f32(c, op, {&y});
  require_shape(op, y, x.shape(), "y");
  int64_t channels = x.dim(1), count = x.numel() / std::max<int64_t>(channels, 1);
  ErrorContext where = op_context(op, x);
  check(!p.training || count > 1, "training batch norm needs more than one value per channel", where);
  *saved = device_empty(c.gpu, DType::f32, {2, channels});
  if (x.numel() == 0) return;
  ForwardArgs a{f32(gamma), f32(beta), f32_mut(running_mean), f32_mut(running_var), f32_mut(*saved),
                p.eps, p.momentum, p.training};
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<unsigned(channels), kBlock, 0, c.gpu.stream>>>(walk(x), static_cast<const T*>(x.raw()),
                                                                       static_cast<T*>(y.raw()), a);
  });
  check_launch("batch_norm forward_kernel", where);
}

void batch_norm_backward(void* ctx, const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                         const Tensor& saved, const Tensor& dy, const GradOut& dx, const GradOut& dgamma,
                         const GradOut& dbeta) {
  const char* op = "batch_norm_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma});
  require_f32(c, op, {&dy, &saved});
  require_shape(op, dy, x.shape(), "dy");
  require_shape(op, saved, {2, x.dim(1)}, "the saved statistics");
  BackwardArgs a{f32(gamma), f32(saved), p.eps, p.training, grad_ptr(c, op, dx, x.shape()),
                 grad_ptr(c, op, dgamma, {x.dim(1)}), grad_ptr(c, op, dbeta, {x.dim(1)})};
  if ((!a.dx && !a.dgamma && !a.dbeta) || x.numel() == 0) return;
  ErrorContext where = op_context(op, x);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<unsigned(x.dim(1)), kBlock, 0, c.gpu.stream>>>(walk(x), static_cast<const T*>(x.raw()),
                                                                        static_cast<const T*>(dy.raw()), a);
  });
  check_launch("batch_norm backward_kernel", where);
}

}  // namespace tandem::cuda::train
