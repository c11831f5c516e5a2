// Layer norm for training, f32 / f16 / bf16 activations with f32
// statistics and arithmetic (as cuda/layernorm.cu's inference kernel).
// x is viewed as [rows, cols, inner] in the order its bytes hold it: a
// LayerNorm2d input in nhwc is [N*H*W, C, 1], so channels-last normalizes
// contiguous vectors. Two shapes of work:
//   inner == 1: one warp per vector (contiguous cols), warp-shuffle sums;
//   inner  > 1: one thread per vector, neighbouring threads reading
//               neighbouring inner positions (coalesced), cols apart by inner.
// The mean first, then the variance as the mean of squared deviations (two
// passes: no cancellation when |mean| >> std).
//   forward:  y = (x - mean) * rstd * gamma + beta; saved f32 [2, vectors]
//   backward: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma;
//             dgamma[j] = sum dy * xhat, dbeta[j] = sum dy, one block per column
//             (few blocks for few channels: a split over vector chunks would
//             fill the GPU better).
// rstd is 1 / sqrtf(var + epsilon), as the inference kernel computes it.
#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

struct View {
  int64_t rows, cols, inner;
  float epsilon;
  __host__ __device__ int64_t vectors() const { return rows * inner; }
};

// Vector v's first element and the distance between its elements.
__device__ __forceinline__ int64_t vector_base(const View& w, int64_t v) {
  return (v / w.inner) * w.cols * w.inner + v % w.inner;
}

template <typename T>
__device__ __forceinline__ void normalize_vector(const View& w, const T* x, T* y,
                                                 const float* gamma, const float* beta,
                                                 int64_t base, int64_t step, int lane, int lanes,
                                                 float mean, float rstd) {
  for (int64_t j = lane; j < w.cols; j += lanes) {
    float r = (load(x, base + j * step) - mean) * rstd * gamma[j];
    store(y, base + j * step, beta ? r + beta[j] : r);
  }
}

// inner == 1: warp `v` of the grid normalizes vector v.
template <typename T>
__global__ void forward_warp_kernel(View w, const T* x, T* y, const float* gamma, const float* beta,
                                    float* mean_out, float* rstd_out) {
  const int64_t v = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (v >= w.rows) return;  // whole warps leave together: the shuffles below see all 32 lanes
  const int64_t base = v * w.cols;
  float s = 0.f;
  for (int64_t j = lane; j < w.cols; j += 32) s += load(x, base + j);
  const float mean = warp_reduce(s, SumOp{}) / float(w.cols);
  float q = 0.f;
  for (int64_t j = lane; j < w.cols; j += 32) {
    const float d = load(x, base + j) - mean;
    q += d * d;
  }
  const float rstd = 1.f / sqrtf(warp_reduce(q, SumOp{}) / float(w.cols) + w.epsilon);
  normalize_vector(w, x, y, gamma, beta, base, 1, lane, 32, mean, rstd);
  if (lane == 0) {
    mean_out[v] = mean;
    rstd_out[v] = rstd;
  }
}

// inner > 1: thread v normalizes vector v.
template <typename T>
__global__ void forward_strided_kernel(View w, const T* x, T* y, const float* gamma,
                                       const float* beta, float* mean_out, float* rstd_out) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < w.vectors();
       v += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = vector_base(w, v);
    float s = 0.f;
    for (int64_t j = 0; j < w.cols; ++j) s += load(x, base + j * w.inner);
    const float mean = s / float(w.cols);
    float q = 0.f;
    for (int64_t j = 0; j < w.cols; ++j) {
      const float d = load(x, base + j * w.inner) - mean;
      q += d * d;
    }
    const float rstd = 1.f / sqrtf(q / float(w.cols) + w.epsilon);
    normalize_vector(w, x, y, gamma, beta, base, w.inner, 0, 1, mean, rstd);
    mean_out[v] = mean;
    rstd_out[v] = rstd;
  }
}

struct BackwardArgs {
  const float* gamma;
  const float* mean;
  const float* rstd;
  bool accumulate;
};

template <typename T>
__device__ __forceinline__ void input_gradient(const View& w, const T* x, const T* dy, T* dx,
                                               const BackwardArgs& a, int64_t v, int64_t base,
                                               int64_t step, float sum_g, float sum_gx, int lane,
                                               int lanes) {
  const float mean = a.mean[v], rstd = a.rstd[v], n = float(w.cols);
  for (int64_t j = lane; j < w.cols; j += lanes) {
    const int64_t k = base + j * step;
    const float xhat = (load(x, k) - mean) * rstd;
    float d = rstd * (load(dy, k) * a.gamma[j] - (sum_g + xhat * sum_gx) / n);
    if (a.accumulate) d += load(dx, k);
    store(dx, k, d);
  }
}

template <typename T>
__global__ void backward_warp_kernel(View w, const T* x, const T* dy, T* dx, BackwardArgs a) {
  const int64_t v = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (v >= w.rows) return;
  const int64_t base = v * w.cols;
  const float mean = a.mean[v], rstd = a.rstd[v];
  float sg = 0.f, sgx = 0.f;
  for (int64_t j = lane; j < w.cols; j += 32) {
    const float g = load(dy, base + j) * a.gamma[j];
    sg += g;
    sgx += g * (load(x, base + j) - mean) * rstd;
  }
  input_gradient(w, x, dy, dx, a, v, base, 1, warp_reduce(sg, SumOp{}), warp_reduce(sgx, SumOp{}),
                 lane, 32);
}

template <typename T>
__global__ void backward_strided_kernel(View w, const T* x, const T* dy, T* dx, BackwardArgs a) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < w.vectors();
       v += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = vector_base(w, v);
    const float mean = a.mean[v], rstd = a.rstd[v];
    float sg = 0.f, sgx = 0.f;
    for (int64_t j = 0; j < w.cols; ++j) {
      const float g = load(dy, base + j * w.inner) * a.gamma[j];
      sg += g;
      sgx += g * (load(x, base + j * w.inner) - mean) * rstd;
    }
    input_gradient(w, x, dy, dx, a, v, base, w.inner, sg, sgx, 0, 1);
  }
}

// Block j: dgamma[j] and dbeta[j] over every vector (f32 outputs; null: not wanted).
template <typename T>
__global__ void parameter_gradient_kernel(View w, const T* x, const T* dy, const float* mean,
                                          const float* rstd, float* dgamma, bool dgamma_acc,
                                          float* dbeta, bool dbeta_acc) {
  const int64_t j = blockIdx.x;
  float sg = 0.f, sb = 0.f;
  for (int64_t v = threadIdx.x; v < w.vectors(); v += blockDim.x) {
    const int64_t k = vector_base(w, v) + j * w.inner;
    const float d = load(dy, k);
    sg += d * (load(x, k) - mean[v]) * rstd[v];
    sb += d;
  }
  sg = block_reduce(sg, SumOp{}, 0.f);
  sb = block_reduce(sb, SumOp{}, 0.f);
  if (threadIdx.x != 0) return;
  if (dgamma) dgamma[j] = dgamma_acc ? dgamma[j] + sg : sg;
  if (dbeta) dbeta[j] = dbeta_acc ? dbeta[j] + sb : sb;
}

// p's view of x as its bytes hold it, checking x's layout: nhwc only for a
// LayerNorm2d over the channels of a 4-D x.
View physical_view(const char* op, const ops::LayerNormParams& p, const Tensor& x, Layout layout) {
  TANDEM_CHECK(p.rows >= 0 && p.cols > 0 && p.inner >= 1 && x.numel() == p.rows * p.cols * p.inner,
               "x must hold rows * cols * inner = " + std::to_string(p.rows) + " * " +
                   std::to_string(p.cols) + " * " + std::to_string(p.inner) + " values",
               op_context(op, x));
  if (layout == Layout::plain) return {p.rows, p.cols, p.inner, p.epsilon};
  check_supported(x.rank() == 4 && p.axis == 1 && p.cols == x.shape()[1],
                  "layer norm on an nhwc tensor normalizes its channels only", op_context(op, x));
  return {p.rows * p.inner, p.cols, 1, p.epsilon};
}

unsigned warp_blocks(int64_t rows) {
  return unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void layer_norm_forward(void* ctx, const ops::LayerNormParams& p, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, const Tensor& y, Tensor* saved) {
  const char* op = "layer_norm_forward";
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&x, &y});
  require_f32(c, op, {&gamma, &beta});
  require_shape(op, y, x.shape(), "y");
  require_shape(op, gamma, {p.cols}, "gamma");
  if (beta.defined()) require_shape(op, beta, {p.cols}, "beta");
  const View w = physical_view(op, p, x, d.layout);
  check_supported(w.inner > 1 || w.rows / kWarpsPerBlock < INT32_MAX,
                  "layer norm over more than 2^34 rows", op_context(op, x));
  Tensor stats = device_empty(c.gpu, DType::f32, {2, w.vectors()});
  if (saved) *saved = stats;
  if (w.vectors() == 0) return;
  float *mean = stats.data<float>(), *rstd = mean + w.vectors();
  const float* b = beta.defined() ? beta.data<float>() : nullptr;
  const ErrorContext where = op_context(op, x);
  with_float_type(d.dtype, op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* xs = static_cast<const T*>(x.raw());
    T* ys = static_cast<T*>(y.raw());
    if (w.inner == 1)
      forward_warp_kernel<T><<<warp_blocks(w.rows), kThreads, 0, c.gpu.stream>>>(
          w, xs, ys, gamma.data<float>(), b, mean, rstd);
    else
      forward_strided_kernel<T>
          <<<blocks_for(w.vectors(), c.gpu.props), kThreads, 0, c.gpu.stream>>>(
              w, xs, ys, gamma.data<float>(), b, mean, rstd);
  });
  check_launch("layer_norm forward kernel", where);
}

void layer_norm_backward(void* ctx, const ops::LayerNormParams& p, const Tensor& x,
                         const Tensor& gamma, const Tensor& saved, const Tensor& dy,
                         const GradOut& dx, const GradOut& dgamma, const GradOut& dbeta) {
  const char* op = "layer_norm_backward";
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&x, &dy});
  require_f32(c, op, {&gamma, &saved});
  require_shape(op, dy, x.shape(), "dy");
  require_shape(op, gamma, {p.cols}, "gamma");
  const View w = physical_view(op, p, x, d.layout);
  require_shape(op, saved, {2, w.vectors()}, "saved");
  const GradPtr gx = grad_ptr(c, op, dx, x.shape(), d.dtype, d.layout);
  const GradPtr gg = grad_ptr(c, op, dgamma, {p.cols}), gb = grad_ptr(c, op, dbeta, {p.cols});
  const float *mean = saved.data<float>(), *rstd = mean + w.vectors();
  const ErrorContext where = op_context(op, x);
  with_float_type(d.dtype, op, where, [&](auto zero) {
    using T = decltype(zero);
    const T *xs = static_cast<const T*>(x.raw()), *dys = static_cast<const T*>(dy.raw());
    if (gx && w.vectors() > 0) {
      const BackwardArgs a{gamma.data<float>(), mean, rstd, gx.accumulate};
      if (w.inner == 1)
        backward_warp_kernel<T><<<warp_blocks(w.rows), kThreads, 0, c.gpu.stream>>>(
            w, xs, dys, static_cast<T*>(gx.p), a);
      else
        backward_strided_kernel<T>
            <<<blocks_for(w.vectors(), c.gpu.props), kThreads, 0, c.gpu.stream>>>(
                w, xs, dys, static_cast<T*>(gx.p), a);
      check_launch("layer_norm backward kernel", where);
    }
    if (gg || gb) {
      parameter_gradient_kernel<T><<<unsigned(w.cols), kThreads, 0, c.gpu.stream>>>(
          w, xs, dys, mean, rstd, static_cast<float*>(gg.p), gg.accumulate,
          static_cast<float*>(gb.p), gb.accumulate);
      check_launch("layer_norm parameter gradient kernel", where);
    }
  });
}

}  // namespace tandem::cuda::train
