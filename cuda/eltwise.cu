// Unary elementwise ops (activations and math) on f32, f16 and bf16: one
// grid-stride kernel per op, the op a template argument so each compiles to
// its own straight-line loop. Layout-agnostic: the output keeps the input's
// layout. Activations are ops/activation_math.h's, shared with the fused
// epilogues and training.
#include <cmath>
#include <memory>

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"
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

template <typename F, typename T>
__global__ void unary_kernel(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(y, i, f(load(x, i)));
}

template <typename F, typename T>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(Context& c, int64_t n, F f, ErrorContext where) : c_(c), n_(n), f_(f), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    unary_kernel<F, T><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(static_cast<const T*>(in[0]),
                                                                             static_cast<T*>(out[0]), n_, f_);
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

}  // namespace tandem::cuda
