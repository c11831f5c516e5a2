// Unary elementwise ops (activations and math) on f32, f16 and bf16: one
// grid-stride kernel per op, the op a template argument so each compiles to
// its own straight-line loop, 16 bytes per access where the tensor allows.
// Layout-agnostic: the output keeps the input's layout. Activations are
// ops/activation_math.h's, shared with the fused epilogues.
// The training table's activation entries are here too: the forward runs
// the very kernel inference runs (so a trained model infers what its
// training forward computed, bit for bit), the backward multiplies dy by the
// derivative from the input values. Computed in f32 whatever the storage type.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "cuda/train_context.h"
#include "ops/activation_math.h"
#include "ops/elementwise.h"

namespace tandem::cuda {

namespace {

enum class Op { exp, log, sqrt, neg, abs, floor, ceil, reciprocal, erf };

template <Op K>
__device__ __forceinline__ float apply(float x) {
  if constexpr (K == Op::exp) return expf(x);
  if constexpr (K == Op::log) return logf(x);
  if constexpr (K == Op::sqrt) return sqrtf(x);
  if constexpr (K == Op::neg) return -x;
  if constexpr (K == Op::abs) return fabsf(x);
  if constexpr (K == Op::floor) return floorf(x);
  if constexpr (K == Op::ceil) return ceilf(x);
  if constexpr (K == Op::reciprocal) return 1.f / x;
  if constexpr (K == Op::erf) return erff(x);
  return x;
}

// F: the function as a functor type (a math Op, or an activation kind with
// its parameters), so the loop compiles once per function.
template <Op K>
struct MathFn {
  __device__ float operator()(float x) const { return apply<K>(x); }
};

template <ops::ActivationKind K>
struct ActivationFn {
  ops::Activation a;
  __device__ float operator()(float x) const { return ops::activate<K>(a, x); }
};

// V elements per thread: one 16-byte access each way where n and the
// pointers allow (packable).
template <typename F, int V, typename T>
__global__ void unary_kernel(const T* x, T* y, int64_t packs, F f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> in = reinterpret_cast<const Pack<V, T>*>(x)[i];
    Pack<V, T> out;
    for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(f(to_float(in.v[e])));
    reinterpret_cast<Pack<V, T>*>(y)[i] = out;
  }
}

// Whether n elements of T at these pointers move 16 bytes per access.
template <typename T>
bool packable(int64_t n, std::initializer_list<const void*> ptrs) {
  bool ok = n % kPackOf<T> == 0;
  for (const void* p : ptrs) ok = ok && aligned16(p);
  return ok;
}

// y = f(x) over n elements on `stream`; the launch is the caller's to check.
template <typename F, typename T>
void launch_unary(const T* x, T* y, int64_t n, F f, const cudaDeviceProp& props, cudaStream_t stream) {
  with_pack<T>(packable<T>(n, {x, y}), [&](auto v) {
    constexpr int V = decltype(v)::value;
    unary_kernel<F, V, T><<<blocks_for(n / V, props), kThreads, 0, stream>>>(x, y, n / V, f);
  });
}

template <typename F, typename T>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(Context& c, int64_t n, F f, ErrorContext where) : c_(c), n_(n), f_(f), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    launch_unary(static_cast<const T*>(in[0]), static_cast<T*>(out[0]), n_, f_, c_.props, c_.stream);
    check_launch("unary_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  F f_;
  ErrorContext where_;
};

// Elements the buffer holds, channel padding of blocked layouts included.
int64_t buffer_elements(const TensorDesc& d) { return int64_t(d.bytes() / dtype_size(d.dtype)); }

template <typename F>
KernelPlan make_unary(const OpDesc& op, Context& c, F f) {
  const TensorDesc& in = op.inputs[0];
  KernelPlan plan;
  int64_t n = buffer_elements(in);
  plan.kernel = with_float_type(in.dtype, "CUDA " + op.op_type, op.context(), [&](auto t) {
    return std::unique_ptr<Kernel>(std::make_unique<UnaryKernel<F, decltype(t)>>(c, n, f, op.context()));
  });
  plan.input_layouts = {in.layout};
  plan.output_layouts = {in.layout};
  return plan;
}

template <Op K>
KernelPlan math_op(const OpDesc& op, Context& c) {
  return make_unary(op, c, MathFn<K>{});
}

KernelPlan activation(const OpDesc& op, Context& c) {
  const ops::Activation a = *ops::activation_of(op);
  KernelPlan plan;
  ops::with_activation_kind(a.kind, [&](auto k) { plan = make_unary(op, c, ActivationFn<decltype(k)::value>{a}); });
  return plan;
}

// Identity-like ops only rename a buffer.
KernelPlan alias(const OpDesc& op, Context&) {
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts = {op.inputs[0].layout};
  plan.output_layouts = {op.inputs[0].layout};
  return plan;
}

// Inference Dropout's mask (output 1): all true, one byte per element.
class DropoutMaskKernel final : public Kernel {
 public:
  DropoutMaskKernel(Context& c, int64_t n, ErrorContext where) : c_(c), n_(n), where_(std::move(where)) {}
  void run(const void* const*, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    check_cuda(cudaMemsetAsync(out[1], 1, size_t(n_), c_.stream), "cudaMemsetAsync(Dropout mask)", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  ErrorContext where_;
};

// Output 0 is the input (a view); training-mode Dropout is refused.
KernelPlan dropout(const OpDesc& op, Context& c) {
  ops::check_inference_dropout(op);
  KernelPlan plan = alias(op, c);
  if (op.outputs.size() > 1) plan.kernel = std::make_unique<DropoutMaskKernel>(c, op.outputs[1].numel(), op.context());
  return plan;
}

}  // namespace

void register_eltwise_kernels() {
  for (const char* t : {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Clip", "Softplus", "Gelu"})
    register_kernel(t, activation);
  register_kernel("Exp", math_op<Op::exp>);
  register_kernel("Log", math_op<Op::log>);
  register_kernel("Sqrt", math_op<Op::sqrt>);
  register_kernel("Neg", math_op<Op::neg>);
  register_kernel("Abs", math_op<Op::abs>);
  register_kernel("Floor", math_op<Op::floor>);
  register_kernel("Ceil", math_op<Op::ceil>);
  register_kernel("Reciprocal", math_op<Op::reciprocal>);
  register_kernel("Erf", math_op<Op::erf>);
  register_kernel("Identity", alias);
  register_kernel("Dropout", dropout);
}

namespace train {

namespace {

template <ops::ActivationKind K, int V, typename T>
__global__ void activation_backward_kernel(ops::Activation a, const T* x, const T* dy, T* dx, bool accumulate,
                                           int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
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
    ops::with_activation_kind(p.kind, [&](auto k) {
      launch_unary(static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), n, ActivationFn<decltype(k)::value>{p},
                   c.gpu.props, c.gpu.stream);
    });
  });
  check_launch("eltwise unary_kernel", where);
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
    with_pack<T>(packable<T>(n, {x.raw(), dy.raw(), g.p}), [&](auto v) {
      constexpr int V = decltype(v)::value;
      ops::with_activation_kind(p.kind, [&](auto k) {
        activation_backward_kernel<decltype(k)::value, V, T>
            <<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
                p, static_cast<const T*>(x.raw()), static_cast<const T*>(dy.raw()), static_cast<T*>(g.p),
                g.accumulate, n / V);
      });
    });
  });
  check_launch("eltwise activation_backward_kernel", where);
}

}  // namespace train

}  // namespace tandem::cuda
