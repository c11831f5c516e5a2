// Activations for training and their backward (from the input values), one
// grid-stride pass over the tensor as a vector, with the CPU table's
// (oneDNN's) formulas:
//   relu / leaky_relu: x > 0 ? x : alpha x          d: x > 0 ? 1 : alpha
//   silu: x / (1 + e^-x)                            d: s + x s (1 - s), s = sigmoid(x)
//   hardswish: x min(max(x + 3, 0), 6) / 6          d: 0 below -3, 1 above 3, (2x + 3) / 6 between
//   sigmoid: 1 / (1 + e^-x)                         d: s (1 - s)
//   tanh                                            d: 1 - tanh(x)^2
// Computed in f32 whatever the storage type.
#include <type_traits>

#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train/common.h"

namespace tandem::cuda::train {

namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

__device__ __forceinline__ float activation(EltwiseKind k, float alpha, float x) {
  switch (k) {
    case EltwiseKind::relu:
    case EltwiseKind::leaky_relu: return x > 0.f ? x : alpha * x;
    case EltwiseKind::silu: return x / (1.f + expf(-x));
    case EltwiseKind::hardswish: return x * fminf(fmaxf(x + 3.f, 0.f), 6.f) / 6.f;
    case EltwiseKind::sigmoid: return sigmoid(x);
    case EltwiseKind::tanh: return tanhf(x);
  }
  return x;
}

// d activation / dx at x.
__device__ __forceinline__ float derivative(EltwiseKind k, float alpha, float x) {
  switch (k) {
    case EltwiseKind::relu:
    case EltwiseKind::leaky_relu: return x > 0.f ? 1.f : alpha;
    case EltwiseKind::silu: {
      float s = sigmoid(x);
      return s + x * s * (1.f - s);
    }
    case EltwiseKind::hardswish: return x < -3.f ? 0.f : x > 3.f ? 1.f : (2.f * x + 3.f) / 6.f;
    case EltwiseKind::sigmoid: {
      float s = sigmoid(x);
      return s * (1.f - s);
    }
    case EltwiseKind::tanh: {
      float t = tanhf(x);
      return 1.f - t * t;
    }
  }
  return 1.f;
}

// V elements per thread: one 16-byte access each way where n allows.
template <int V, typename T>
__global__ void forward_kernel(EltwiseKind k, float alpha, const T* x, T* y, int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> in = reinterpret_cast<const Pack<V, T>*>(x)[i];
    Pack<V, T> out;
    for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(activation(k, alpha, to_float(in.v[e])));
    reinterpret_cast<Pack<V, T>*>(y)[i] = out;
  }
}

template <int V, typename T>
__global__ void backward_kernel(EltwiseKind k, float alpha, const T* x, const T* dy, T* dx,
                                bool accumulate, int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> in = reinterpret_cast<const Pack<V, T>*>(x)[i];
    const Pack<V, T> d = reinterpret_cast<const Pack<V, T>*>(dy)[i];
    Pack<V, T> out;
    if (accumulate) out = reinterpret_cast<const Pack<V, T>*>(dx)[i];
    for (int e = 0; e < V; ++e) {
      const float g = to_float(d.v[e]) * derivative(k, alpha, to_float(in.v[e]));
      out.v[e] = from_float<T>(accumulate ? to_float(out.v[e]) + g : g);
    }
    reinterpret_cast<Pack<V, T>*>(dx)[i] = out;
  }
}

// Calls f(std::integral_constant<int, V>{}) for n elements of T.
template <typename T, typename F>
void with_pack(int64_t n, F&& f) {
  if (n % kPackOf<T> == 0)
    f(std::integral_constant<int, kPackOf<T>>{});
  else
    f(std::integral_constant<int, 1>{});
}

// relu is leaky relu with slope 0; the others take no parameter.
float slope(const EltwiseParams& p) { return p.kind == EltwiseKind::leaky_relu ? p.alpha : 0.f; }

}  // namespace

void eltwise_forward(void* ctx, const EltwiseParams& p, const Tensor& x, const Tensor& y) {
  const char* op = "eltwise_forward";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  int64_t n = x.numel();
  if (n == 0) return;
  ErrorContext where = op_context(op, x);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    with_pack<T>(n, [&](auto v) {
      constexpr int V = decltype(v)::value;
      forward_kernel<V, T><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
          p.kind, slope(p), static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), n / V);
    });
  });
  check_launch("eltwise forward_kernel", where);
}

void eltwise_backward(void* ctx, const EltwiseParams& p, const Tensor& x, const Tensor& dy, const GradOut& dx) {
  const char* op = "eltwise_backward";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&x, &dy});
  require_shape(op, dy, x.shape(), "dy");
  GradPtr g = grad_ptr(c, op, dx, x.shape(), x.dtype(), x.layout());
  int64_t n = x.numel();
  if (!g || n == 0) return;
  ErrorContext where = op_context(op, x);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    with_pack<T>(n, [&](auto v) {
      constexpr int V = decltype(v)::value;
      backward_kernel<V, T><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
          p.kind, slope(p), static_cast<const T*>(x.raw()), static_cast<const T*>(dy.raw()),
          static_cast<T*>(g.p), g.accumulate, n / V);
    });
  });
  check_launch("eltwise backward_kernel", where);
}

}  // namespace tandem::cuda::train
