// Unary elementwise ops (activations and math) on f32, f16 and bf16: one
// grid-stride kernel per op, the op a functor so each compiles to its own
// straight-line loop. Layout-agnostic: the output keeps the input's layout.
#include <cmath>
#include <memory>

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "ops/elementwise.h"

namespace tandem::cuda {

namespace {

struct Params {
  float alpha = 0.f, beta = 0.f, gamma = 1.f;
};

enum class Op { relu, leaky_relu, sigmoid, tanh, hard_swish, hard_sigmoid, clip, elu, exp, log, sqrt, neg, abs,
                floor, ceil, reciprocal, softplus, silu, erf, gelu, gelu_tanh };

template <Op K>
__device__ __forceinline__ float apply(float x, const Params& p) {
  if constexpr (K == Op::relu) return fmaxf(x, 0.f);
  if constexpr (K == Op::leaky_relu) return x >= 0.f ? x : p.alpha * x;
  if constexpr (K == Op::sigmoid) return 1.f / (1.f + expf(-x));
  if constexpr (K == Op::tanh) return tanhf(x);
  if constexpr (K == Op::hard_swish) return x * fminf(fmaxf(x + 3.f, 0.f), 6.f) * (1.f / 6.f);
  if constexpr (K == Op::hard_sigmoid) return fminf(fmaxf(p.alpha * x + p.beta, 0.f), p.gamma);
  if constexpr (K == Op::clip) return fminf(fmaxf(x, p.alpha), p.beta);
  if constexpr (K == Op::elu) return x >= 0.f ? x : p.alpha * (expf(x) - 1.f);
  if constexpr (K == Op::exp) return expf(x);
  if constexpr (K == Op::log) return logf(x);
  if constexpr (K == Op::sqrt) return sqrtf(x);
  if constexpr (K == Op::neg) return -x;
  if constexpr (K == Op::abs) return fabsf(x);
  if constexpr (K == Op::floor) return floorf(x);
  if constexpr (K == Op::ceil) return ceilf(x);
  if constexpr (K == Op::reciprocal) return 1.f / x;
  if constexpr (K == Op::softplus) return x > 20.f ? x : log1pf(expf(x));
  if constexpr (K == Op::silu) return x / (1.f + expf(-x));
  if constexpr (K == Op::erf) return erff(x);
  // ONNX Gelu: x/2 * (1 + erf(x/sqrt(2))), or its tanh approximation.
  if constexpr (K == Op::gelu) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  if constexpr (K == Op::gelu_tanh)
    return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  return x;
}

template <Op K, typename T>
__global__ void unary_kernel(const T* x, T* y, int64_t n, Params p) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(y, i, apply<K>(load(x, i), p));
}

template <Op K, typename T>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(Context& c, int64_t n, Params p, ErrorContext where) : c_(c), n_(n), p_(p), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    unary_kernel<K, T><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(static_cast<const T*>(in[0]),
                                                                             static_cast<T*>(out[0]), n_, p_);
    check_launch("unary_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  Params p_;
  ErrorContext where_;
};

// Elements the buffer holds, channel padding of blocked layouts included.
int64_t buffer_elements(const TensorDesc& d) { return int64_t(d.bytes() / dtype_size(d.dtype)); }

template <Op K>
KernelPlan make_unary(const OpDesc& op, Context& c, Params p) {
  const TensorDesc& in = op.inputs[0];
  KernelPlan plan;
  int64_t n = buffer_elements(in);
  plan.kernel = with_float_type(in.dtype, "CUDA " + op.op_type, op.context(), [&](auto t) {
    return std::unique_ptr<Kernel>(std::make_unique<UnaryKernel<K, decltype(t)>>(c, n, p, op.context()));
  });
  plan.input_layouts = {in.layout};
  plan.output_layouts = {in.layout};
  return plan;
}

float constant_scalar(const OpDesc& op, size_t i, float fallback) {
  if (!op.has_input(i)) return fallback;
  check_supported(op.constants.size() > i && op.constants[i], "CUDA " + op.op_type + " needs constant bounds", op.context());
  return float(op.constants[i]->scalar_at(0));
}

#define TANDEM_UNARY(name, kind, params) \
  KernelPlan name(const OpDesc& op, Context& c) { return make_unary<Op::kind>(op, c, params); }

TANDEM_UNARY(relu, relu, {})
TANDEM_UNARY(sigmoid, sigmoid, {})
TANDEM_UNARY(tanh_op, tanh, {})
TANDEM_UNARY(hard_swish, hard_swish, {})
TANDEM_UNARY(exp_op, exp, {})
TANDEM_UNARY(log_op, log, {})
TANDEM_UNARY(sqrt_op, sqrt, {})
TANDEM_UNARY(neg, neg, {})
TANDEM_UNARY(abs_op, abs, {})
TANDEM_UNARY(floor_op, floor, {})
TANDEM_UNARY(ceil_op, ceil, {})
TANDEM_UNARY(reciprocal, reciprocal, {})
TANDEM_UNARY(softplus, softplus, {})
TANDEM_UNARY(erf_op, erf, {})
TANDEM_UNARY(leaky_relu, leaky_relu, (Params{op.attributes().get_float("alpha", 0.01f)}))
TANDEM_UNARY(elu, elu, (Params{op.attributes().get_float("alpha", 1.f)}))
TANDEM_UNARY(hard_sigmoid, hard_sigmoid,
             (Params{op.attributes().get_float("alpha", 0.2f), op.attributes().get_float("beta", 0.5f), 1.f}))
#undef TANDEM_UNARY

KernelPlan clip(const OpDesc& op, Context& c) {
  const Attributes& a = op.attributes();
  Params p{a.get_float("min", -INFINITY), a.get_float("max", INFINITY)};
  p.alpha = constant_scalar(op, 1, p.alpha);
  p.beta = constant_scalar(op, 2, p.beta);
  return make_unary<Op::clip>(op, c, p);
}

KernelPlan gelu(const OpDesc& op, Context& c) {
  return ops::gelu_uses_tanh(op.attributes()) ? make_unary<Op::gelu_tanh>(op, c, {}) : make_unary<Op::gelu>(op, c, {});
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
  register_kernel("Relu", relu);
  register_kernel("Sigmoid", sigmoid);
  register_kernel("Tanh", tanh_op);
  register_kernel("HardSwish", hard_swish);
  register_kernel("HardSigmoid", hard_sigmoid);
  register_kernel("LeakyRelu", leaky_relu);
  register_kernel("Elu", elu);
  register_kernel("Clip", clip);
  register_kernel("Exp", exp_op);
  register_kernel("Log", log_op);
  register_kernel("Sqrt", sqrt_op);
  register_kernel("Neg", neg);
  register_kernel("Abs", abs_op);
  register_kernel("Floor", floor_op);
  register_kernel("Ceil", ceil_op);
  register_kernel("Reciprocal", reciprocal);
  register_kernel("Softplus", softplus);
  register_kernel("Erf", erf_op);
  register_kernel("Gelu", gelu);
  register_kernel("Identity", alias);
  register_kernel("Dropout", dropout);
}

}  // namespace tandem::cuda
