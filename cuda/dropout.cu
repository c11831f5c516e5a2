// Inverted dropout. The keep mask is ops/dropout.h's function of (seed,
// element index), the CPU table's own, so both devices drop the same elements;
// the scaling rounds each operation on its own (no fused multiply-add), as
// the CPU loop does, so outputs and gradients are the CPU's bits too.
//   x / y / dy / dx: any shape; saved: u8 [numel], 1 where kept. An nhwc
//   tensor's index is its byte order's (its mask differs from the same
//   values' in plain layout).
#include "ops/dropout.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

void check_p(const char* op, const ops::DropoutParams& p, const Tensor& t) {
  TANDEM_CHECK(p.p >= 0 && p.p < 1,
               "dropout probability must be in [0, 1), got " + std::to_string(p.p),
               op_context(op, t));
}

template <typename T>
__global__ void forward_kernel(ops::DropoutMask mask, float scale, const T* x, T* y, uint8_t* keep, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    bool k = mask.keep(i);
    keep[i] = k;
    store(y, i, k ? __fmul_rn(load(x, i), scale) : 0.f);
  }
}

template <typename T>
__global__ void backward_kernel(float scale, const uint8_t* keep, const T* dy, T* dx, bool accumulate, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float g = keep[i] ? __fmul_rn(load(dy, i), scale) : 0.f;
    store(dx, i, accumulate ? __fadd_rn(load(dx, i), g) : g);
  }
}

}  // namespace

void dropout_forward(void* ctx, const ops::DropoutParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = "dropout_forward";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  check_p(op, p, x);
  int64_t n = x.numel();
  *saved = device_empty(c.gpu, DType::u8, {n});
  if (n == 0) return;
  ops::DropoutMask mask = ops::DropoutMask::of(p.p, p.seed);
  float scale = 1.f / (1.f - p.p);
  ErrorContext where = op_context(op, x);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        mask, scale, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), static_cast<uint8_t*>(saved->raw()), n);
  });
  check_launch("dropout forward_kernel", where);
}

void dropout_backward(void* ctx, const ops::DropoutParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = "dropout_backward";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&dy});
  check_p(op, p, dy);
  require_on_gpu(c, op, {&saved}, DType::u8);
  TANDEM_CHECK(saved.defined() && saved.numel() == dy.numel(),
               "dropout's backward needs its forward's mask", op_context(op, dy));
  GradPtr g = grad_ptr(c, op, dx, dy.shape(), dy.dtype(), dy.layout());
  int64_t n = dy.numel();
  if (!g || n == 0) return;
  float scale = 1.f / (1.f - p.p);
  ErrorContext where = op_context(op, dy);
  with_float_type(dy.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        scale, static_cast<const uint8_t*>(saved.raw()), static_cast<const T*>(dy.raw()), static_cast<T*>(g.p),
        g.accumulate, n);
  });
  check_launch("dropout backward_kernel", where);
}

}  // namespace tandem::cuda::train
