// BatchNorm for training, kernels of our own. A channel's N*S values are cut
// into `parts` chunks, each a block, so that a small CNN's 32 channels still
// fill an H200's 132 SMs (one block per channel ran at a tenth of the
// memory bandwidth). Two launches each way:
//   forward:  stats_kernel   each chunk's count, mean and squared deviations
//                            (two passes over the chunk, so no cancellation);
//             normalize_kernel  each block merges its channel's chunks (Chan's
//                            formula, in double), normalizes its chunk; block
//                            0 of a channel updates the running statistics.
//   backward: grad_sums_kernel  each chunk's sum(dy) and sum(dy * xhat);
//             dx_kernel      each block adds its channel's chunk sums (in
//                            double, fixed order: deterministic), writes its
//                            chunk of dx; block 0 writes dgamma and dbeta.
//   x / y / dy / dx [N, C, ...] (T), gamma / beta / running stats [C] (f32);
//   saved [2, C] f32: the mean and biased variance the forward normalized with
//   (the batch's in training, the running ones in eval), as the CPU table.
// Training updates the running statistics as PyTorch (and the CPU table):
// r = (1 - momentum) r + momentum * batch, the variance unbiased (n / (n - 1)).
//   training: dx = gamma / sigma * (dy - mean(dy) - xhat * mean(dy * xhat))
//   eval:     dx = gamma / sigma * dy
//   dgamma = sum(dy * xhat), dbeta = sum(dy), over N and the spatial axes.
#include <algorithm>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/batchnorm_cudnn.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMinChunk =
    4096;  // values per block, at least: below, launch cost beats parallelism
constexpr int kMaxParts = 64;

// x viewed as [N, C, S]: the flat position of value i of channel c.
struct ChannelWalk {
  int64_t n, c, s;
  int parts;  // chunks per channel
  bool nhwc;  // channels last: value i of a channel is C apart from i + 1
  __device__ __forceinline__ int64_t at(int64_t channel, int64_t i) const {
    if (nhwc) return i * c + channel;
    int64_t b = i / s;
    return (b * c + channel) * s + (i - b * s);
  }
  __device__ __forceinline__ int64_t count() const { return n * s; }
  // The values [begin, end) of the channel that chunk `part` covers.
  __device__ __forceinline__ int64_t begin(int part) const { return count() * part / parts; }
  __device__ __forceinline__ int64_t end(int part) const { return count() * (part + 1) / parts; }
};

// One chunk's statistics.
struct Moments {
  float count, mean, m2;  // m2: sum of squared deviations from mean
};

template <typename T>
__global__ void __launch_bounds__(kBlock)
    stats_kernel(ChannelWalk w, const T* x, Moments* partial) {
  const int64_t c = blockIdx.y, b = w.begin(blockIdx.x), e = w.end(blockIdx.x);
  float s = 0.f;
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) s += load(x, w.at(c, i));
  const float n = float(e - b);
  const float mean = block_reduce(s, SumOp{}, 0.f) / n;
  float q = 0.f;
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) {
    float d = load(x, w.at(c, i)) - mean;
    q += d * d;
  }
  q = block_reduce(q, SumOp{}, 0.f);
  if (threadIdx.x == 0) partial[c * w.parts + blockIdx.x] = Moments{n, mean, q};
}

struct ForwardArgs {
  const float *gamma, *beta;
  float *running_mean, *running_var, *saved;
  const Moments* partial;  // [C, parts]; null in eval
  float eps, momentum;
};

// The channel's mean and biased variance from its chunks' moments.
__device__ void merge_moments(const Moments* m, int parts, float* mean, float* var) {
  double n = 0, mu = 0, m2 = 0;
  for (int p = 0; p < parts; ++p) {
    double nb = m[p].count, d = double(m[p].mean) - mu, total = n + nb;
    if (nb == 0) continue;
    mu += d * nb / total;
    m2 += double(m[p].m2) + d * d * n * nb / total;
    n = total;
  }
  *mean = float(mu);
  *var = float(m2 / n);
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    normalize_kernel(ChannelWalk w, const T* x, T* y, ForwardArgs a) {
  const int64_t c = blockIdx.y;
  __shared__ float stats[2];
  if (threadIdx.x == 0) {
    float mean, var;
    if (a.partial) {
      merge_moments(a.partial + c * w.parts, w.parts, &mean, &var);
      if (blockIdx.x == 0) {
        float m = a.momentum;
        double unbias = double(w.count()) / double(w.count() - 1);
        a.running_mean[c] = (1 - m) * a.running_mean[c] + m * mean;
        a.running_var[c] = float((1 - m) * a.running_var[c] + m * var * unbias);
      }
    } else {
      mean = a.running_mean[c];
      var = a.running_var[c];
    }
    if (blockIdx.x == 0) {
      a.saved[c] = mean;
      a.saved[w.c + c] = var;
    }
    stats[0] = mean;
    stats[1] = var;
  }
  __syncthreads();
  const ops::BatchNormAffine f = ops::batch_norm_affine(a.gamma[c], a.beta[c], stats[0], stats[1], a.eps);
  for (int64_t i = w.begin(blockIdx.x) + threadIdx.x, e = w.end(blockIdx.x); i < e;
       i += blockDim.x) {
    int64_t k = w.at(c, i);
    store(y, k, fmaf(load(x, k), f.scale, f.shift));
  }
}

struct GradSums {
  float dy, dy_xhat;
};

struct BackwardArgs {
  const float *gamma, *saved;
  const GradSums* partial;  // [C, parts]
  float eps;
  bool training;
  GradPtr dx, dgamma, dbeta;
};

__device__ __forceinline__ float invstd_of(const BackwardArgs& a, const ChannelWalk& w, int64_t c) {
  return 1.f / sqrtf(a.saved[w.c + c] + a.eps);
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    grad_sums_kernel(ChannelWalk w, const T* x, const T* dy, BackwardArgs a, GradSums* partial) {
  const int64_t c = blockIdx.y;
  const float mean = a.saved[c], invstd = invstd_of(a, w, c);
  float sum_dy = 0.f, sum_dy_xhat = 0.f;
  for (int64_t i = w.begin(blockIdx.x) + threadIdx.x, e = w.end(blockIdx.x); i < e;
       i += blockDim.x) {
    int64_t k = w.at(c, i);
    float g = load(dy, k);
    sum_dy += g;
    sum_dy_xhat += g * (load(x, k) - mean) * invstd;
  }
  sum_dy = block_reduce(sum_dy, SumOp{}, 0.f);
  sum_dy_xhat = block_reduce(sum_dy_xhat, SumOp{}, 0.f);
  if (threadIdx.x == 0) partial[c * w.parts + blockIdx.x] = GradSums{sum_dy, sum_dy_xhat};
}

__device__ __forceinline__ void put(const GradPtr& g, int64_t i, float v) {
  float* p = static_cast<float*>(g.p);
  p[i] = g.accumulate ? p[i] + v : v;
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    dx_kernel(ChannelWalk w, const T* x, const T* dy, BackwardArgs a) {
  const int64_t c = blockIdx.y;
  __shared__ float sums[2];
  if (threadIdx.x == 0) {
    double s = 0, sx = 0;
    for (int p = 0; p < w.parts; ++p)
      s += a.partial[c * w.parts + p].dy, sx += a.partial[c * w.parts + p].dy_xhat;
    if (blockIdx.x == 0) {
      if (a.dgamma.p) put(a.dgamma, c, float(sx));
      if (a.dbeta.p) put(a.dbeta, c, float(s));
    }
    sums[0] = float(s);
    sums[1] = float(sx);
  }
  __syncthreads();
  if (!a.dx.p) return;
  const float mean = a.saved[c], invstd = invstd_of(a, w, c), scale = a.gamma[c] * invstd;
  const float mean_dy = a.training ? sums[0] / float(w.count()) : 0.f;
  const float mean_dy_xhat = a.training ? sums[1] / float(w.count()) : 0.f;
  T* dx = static_cast<T*>(a.dx.p);
  for (int64_t i = w.begin(blockIdx.x) + threadIdx.x, e = w.end(blockIdx.x); i < e;
       i += blockDim.x) {
    int64_t k = w.at(c, i);
    float xhat = (load(x, k) - mean) * invstd;
    float g = scale * (load(dy, k) - mean_dy - xhat * mean_dy_xhat);
    store(dx, k, a.dx.accumulate ? load(dx, k) + g : g);
  }
}

// Chunks per channel: enough blocks for four per SM, none under kMinChunk values.
ChannelWalk walk(const Tensor& x, const cudaDeviceProp& props) {
  const int64_t n = x.dim(0), c = x.dim(1), s = x.numel() / std::max<int64_t>(n * c, 1);
  const int64_t want = (4 * int64_t(props.multiProcessorCount) + c - 1) / std::max<int64_t>(c, 1);
  const int64_t most = std::max<int64_t>(1, n * s / kMinChunk);
  return {n, c, s, int(std::clamp<int64_t>(std::min(want, most), 1, kMaxParts)),
          x.layout() == Layout::nhwc};
}

dim3 grid(const ChannelWalk& w) { return dim3(unsigned(w.parts), unsigned(w.c)); }

void check_inputs(const TrainContext& c, const char* op, const Tensor& x,
                  std::initializer_list<const Tensor*> per_channel) {
  require_activations(c, op, {&x});
  TANDEM_CHECK(x.rank() >= 2, "batch norm wants x [N, C, ...]", op_context(op, x));
  for (const Tensor* t : per_channel) {
    require_on_gpu(c, op, {t}, DType::f32);
    require_shape(op, *t, {x.dim(1)}, "a per-channel tensor");
  }
}

const float* f32(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* f32_mut(const Tensor& t) { return static_cast<float*>(t.raw()); }

}  // namespace

void batch_norm_forward(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                        const Tensor& y, Tensor* saved) {
  const char* op = "batch_norm_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma, &beta, &running_mean, &running_var});
  require_activations(c, op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  int64_t channels = x.dim(1), count = x.numel() / std::max<int64_t>(channels, 1);
  ErrorContext where = op_context(op, x);
  TANDEM_CHECK(!p.training || count > 1,
               "training batch norm needs more than one value per channel", where);
  if (cudnn_batch_norm_takes(p, x))
    return cudnn_batch_norm_forward(c, p, x, gamma, beta, running_mean, running_var, y, saved,
                                    where);
  *saved = device_empty(c.gpu, DType::f32, {2, channels});
  if (x.numel() == 0) return;
  const ChannelWalk w = walk(x, c.gpu.props);
  Scratch partial(c.gpu, p.training ? sizeof(Moments) * size_t(w.c * w.parts) : 0);
  ForwardArgs a{f32(gamma),
                f32(beta),
                f32_mut(running_mean),
                f32_mut(running_var),
                f32_mut(*saved),
                p.training ? static_cast<const Moments*>(partial.get()) : nullptr,
                p.epsilon,
                p.momentum};
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* xs = static_cast<const T*>(x.raw());
    if (p.training) {
      stats_kernel<T>
          <<<grid(w), kBlock, 0, c.gpu.stream>>>(w, xs, static_cast<Moments*>(partial.get()));
      check_launch("batch_norm stats_kernel", where);
    }
    normalize_kernel<T><<<grid(w), kBlock, 0, c.gpu.stream>>>(w, xs, static_cast<T*>(y.raw()), a);
    check_launch("batch_norm normalize_kernel", where);
  });
}

void batch_norm_backward(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                         const Tensor& saved, const Tensor& dy, const GradOut& dx, const GradOut& dgamma,
                         const GradOut& dbeta) {
  const char* op = "batch_norm_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma});
  require_activations(c, op, {&x, &dy});
  require_shape(op, dy, x.shape(), "dy");
  const GradPtr gx = grad_ptr(c, op, dx, x.shape(), x.dtype(), x.layout()),
                gg = grad_ptr(c, op, dgamma, {x.dim(1)}), gb = grad_ptr(c, op, dbeta, {x.dim(1)});
  if (cudnn_batch_norm_takes(p, x)) {
    if (gx || gg || gb)
      cudnn_batch_norm_backward(c, p, x, gamma, saved, dy, dx, dgamma, dbeta, op_context(op, x));
    return;
  }
  require_f32(c, op, {&saved});
  require_shape(op, saved, {2, x.dim(1)}, "the saved statistics");
  const ChannelWalk w = walk(x, c.gpu.props);
  Scratch partial(c.gpu, sizeof(GradSums) * size_t(w.c * w.parts));
  BackwardArgs a{f32(gamma), f32(saved), static_cast<const GradSums*>(partial.get()),
                 p.epsilon,      p.training, gx,
                 gg,         gb};
  if ((!a.dx && !a.dgamma && !a.dbeta) || x.numel() == 0) return;
  ErrorContext where = op_context(op, x);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T *xs = static_cast<const T*>(x.raw()), *dys = static_cast<const T*>(dy.raw());
    grad_sums_kernel<T><<<grid(w), kBlock, 0, c.gpu.stream>>>(
        w, xs, dys, a, static_cast<GradSums*>(partial.get()));
    check_launch("batch_norm grad_sums_kernel", where);
    // Without dx only block 0 of each channel has work (dgamma, dbeta).
    dim3 g = a.dx ? grid(w) : dim3(1, unsigned(w.c));
    dx_kernel<T><<<g, kBlock, 0, c.gpu.stream>>>(w, xs, dys, a);
    check_launch("batch_norm dx_kernel", where);
  });
}

bool batch_norm_relu_forward(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& z,
                             const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                             const Tensor& running_var, const Tensor& y, Tensor* saved) {
  const char* op = "batch_norm_relu_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma, &beta, &running_mean, &running_var});
  require_activations(c, op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  if (z.defined()) require_activations(c, op, {&z});
  return cudnn_batch_norm_relu_forward(c, p, x, z, gamma, beta, running_mean, running_var, y, saved,
                                       op_context(op, x));
}

void batch_norm_relu_backward(void* ctx, const ops::BatchNormParams& p, const Tensor& x, const Tensor& z,
                              const Tensor& gamma, const Tensor& beta, const Tensor& y,
                              const Tensor& saved, const Tensor& dy, const GradOut& dx,
                              const GradOut& dz, const GradOut& dgamma, const GradOut& dbeta) {
  const char* op = "batch_norm_relu_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, {&gamma, &beta});
  require_activations(c, op, {&x, &y, &dy});
  require_shape(op, dy, x.shape(), "dy");
  grad_ptr(c, op, dx, x.shape(), x.dtype(), x.layout());
  grad_ptr(c, op, dgamma, {x.dim(1)});
  grad_ptr(c, op, dbeta, {x.dim(1)});
  if (z.defined()) grad_ptr(c, op, dz, x.shape(), x.dtype(), x.layout());
  if (!dx.wanted() && !dz.wanted() && !dgamma.wanted() && !dbeta.wanted()) return;
  cudnn_batch_norm_relu_backward(c, p, x, z, gamma, beta, y, saved, dy, dx, dz, dgamma, dbeta,
                                 op_context(op, x));
}

}  // namespace tandem::cuda::train
