// Activations for training and their backward (from the input values), one
// grid-stride pass over the tensor as a vector, with ops/activation_math.h's
// formulas: the ones CUDA inference computes, so a trained model infers what
// its training forward computed. Computed in f32 whatever the storage type.
#include <type_traits>

#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train/common.h"
#include "ops/activation_math.h"

namespace tandem::cuda::train {

namespace {

// V elements per thread: one 16-byte access each way where n allows.
template <ops::ActivationKind K, int V, typename T>
__global__ void forward_kernel(ops::Activation a, const T* x, T* y, int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> in = reinterpret_cast<const Pack<V, T>*>(x)[i];
    Pack<V, T> out;
    for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(ops::activate<K>(a, to_float(in.v[e])));
    reinterpret_cast<Pack<V, T>*>(y)[i] = out;
  }
}

template <ops::ActivationKind K, int V, typename T>
__global__ void backward_kernel(ops::Activation a, const T* x, const T* dy, T* dx,
                                bool accumulate, int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> in = reinterpret_cast<const Pack<V, T>*>(x)[i];
    const Pack<V, T> d = reinterpret_cast<const Pack<V, T>*>(dy)[i];
    Pack<V, T> out;
    if (accumulate) out = reinterpret_cast<const Pack<V, T>*>(dx)[i];
    for (int e = 0; e < V; ++e) {
      const float g = to_float(d.v[e]) * ops::activate_grad<K>(a, to_float(in.v[e]));
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

}  // namespace

void eltwise_forward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& y) {
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
      ops::with_activation_kind(p.kind, [&](auto k) {
        forward_kernel<decltype(k)::value, V, T><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            p, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), n / V);
      });
    });
  });
  check_launch("eltwise forward_kernel", where);
}

void eltwise_backward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& dy, const GradOut& dx) {
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
      ops::with_activation_kind(p.kind, [&](auto k) {
        backward_kernel<decltype(k)::value, V, T><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            p, static_cast<const T*>(x.raw()), static_cast<const T*>(dy.raw()), static_cast<T*>(g.p), g.accumulate,
            n / V);
      });
    });
  });
  check_launch("eltwise backward_kernel", where);
}

}  // namespace tandem::cuda::train
