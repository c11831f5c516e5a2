// Unary activations on oneDNN's eltwise primitive, and training's
// activation entries (below) with the same steps (cpu/post_ops.h); inference
// Dropout (an alias) and training's dropout entries. Works in whatever layout
// the input arrives in (eltwise is layout-agnostic), so activations never
// force a reorder between convolutions.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/eltwise.h"

#include "cpu/dnnl_utils.h"
#include "cpu/post_ops.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/activation_math.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"

namespace tandem::cpu {

namespace {

using alg = dnnl::algorithm;

// The math ops oneDNN computes; activations go through eltwise_steps.
EltwiseStep math_step(const OpDesc& op) {
  const std::string& t = op.op_type;
  if (t == "Exp") return {alg::eltwise_exp};
  if (t == "Sqrt") return {alg::eltwise_sqrt};
  if (t == "Abs") return {alg::eltwise_abs};
  if (t == "Neg") return {alg::eltwise_linear, -1.f, 0.f};
  if (t == "Mish") return {alg::eltwise_mish};
  throw Error::unsupported("no oneDNN eltwise algorithm for this op", op.context());
}

KernelPlan make_eltwise(const OpDesc& op) {
  // bf16 is what oneDNN 2.6's CPU eltwise computes besides f32 (in float,
  // rounding once on store); f16 it does not.
  DType t = op.inputs[0].dtype;
  if (t != DType::f32 && t != DType::bf16)
    throw Error::unsupported("CPU eltwise supports f32 and bf16, got " + op.inputs[0].str());
  std::optional<ops::Activation> a = ops::activation_of(op);
  std::vector<EltwiseStep> steps = a ? eltwise_steps(*a) : std::vector<EltwiseStep>{math_step(op)};
  // The first step is the primitive, any further ones its post-ops.
  dnnl::post_ops po;
  for (size_t i = 1; i < steps.size(); ++i) po.append_eltwise(steps[i].scale, steps[i].algorithm, steps[i].alpha, steps[i].beta);
  return eltwise_kernel(op.inputs[0], steps[0].algorithm, steps[0].alpha, steps[0].beta, &po, op.inputs.size());
}

// Log, Floor, Ceil and Erf through libm, elementwise on plain f32: oneDNN's
// Log approximation is off by ~1e-6 near 1, where ONNX's conformance tests
// expect (close to) exact zeros, and oneDNN 2.6 has no floor, ceil or erf.
template <float (*F)(float)>
class LibmKernel : public Kernel {
 public:
  explicit LibmKernel(int64_t n) : n_(n) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) y[i] = F(x[i]);
  }

 private:
  int64_t n_;
};

template <float (*F)(float)>
KernelPlan make_libm(const OpDesc& op) {
  if (op.inputs[0].dtype != DType::f32)
    throw Error::unsupported("CPU " + op.op_type + " supports f32 only, got " + op.inputs[0].str());
  KernelPlan plan;
  plan.kernel = std::make_unique<LibmKernel<F>>(op.inputs[0].numel());
  plan.input_layouts = {Layout::plain};
  plan.output_layouts = {Layout::plain};
  return plan;
}

float log_f(float x) { return std::log(x); }
float floor_f(float x) { return std::floor(x); }
float ceil_f(float x) { return std::ceil(x); }
float reciprocal_f(float x) { return 1.0f / x; }
float erf_f(float x) { return std::erf(x); }

// Neg of integer shape arithmetic (ONNX's function bodies negate axis
// counts): wraps around as two's complement instead of overflowing.
template <typename T>
class IntNegKernel : public Kernel {
 public:
  explicit IntNegKernel(int64_t n) : n_(n) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    using U = std::make_unsigned_t<T>;
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) y[i] = T(U(0) - U(x[i]));
  }

 private:
  int64_t n_;
};

KernelPlan make_neg(const OpDesc& op) {
  const DType t = op.inputs[0].dtype;
  if (t != DType::i32 && t != DType::i64) return make_eltwise(op);
  KernelPlan plan;
  const int64_t n = op.inputs[0].numel();
  if (t == DType::i32) plan.kernel = std::make_unique<IntNegKernel<int32_t>>(n);
  else plan.kernel = std::make_unique<IntNegKernel<int64_t>>(n);
  plan.input_layouts = {Layout::plain};
  plan.output_layouts = {Layout::plain};
  return plan;
}

// Inference Dropout: output 0 is a view of the input; the optional mask
// (output 1) is all true. Training-mode Dropout is random and not supported.
class MaskKernel : public Kernel {
 public:
  explicit MaskKernel(int64_t n) : n_(n) {}
  void run(const void* const*, void* const* out, const RunContext&) override {
    std::memset(out[1], 1, size_t(n_));
  }

 private:
  int64_t n_;
};

KernelPlan make_dropout(const OpDesc& op) {
  ops::check_inference_dropout(op);
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = op.inputs[0].layout;
  plan.output_layouts.assign(op.outputs.size(), Layout::plain);
  plan.output_layouts[0] = op.inputs[0].layout;
  if (op.outputs.size() > 1) plan.kernel = std::make_unique<MaskKernel>(op.outputs[1].numel());
  return plan;
}

// Identity is a view of its input.
KernelPlan make_alias(const OpDesc& op) {
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts = {op.inputs[0].layout};
  plan.output_layouts = {op.inputs[0].layout};
  return plan;
}

}  // namespace

KernelPlan eltwise_kernel(const TensorDesc& x, dnnl::algorithm f, float alpha, float beta,
                          const dnnl::post_ops* post, size_t num_inputs) {
  // Plain tensors of any rank are one dense run of elements: describe them as
  // [1,1,1,n] (oneDNN 2.6's reference eltwise with post-ops writes nothing for
  // 1-D tensors).
  dnnl::memory::desc m = x.layout == Layout::plain ? md(x.dtype, {1, 1, 1, x.numel()}, Layout::plain) : md(x);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (post) attr.set_post_ops(*post);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, f, m, alpha, beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr, engine());
  return single_primitive_plan(dnnl::eltwise_forward(pd), pd.scratchpad_desc(), m, x.layout, m, x.layout,
                               num_inputs);
}

void register_eltwise_kernels() {
  for (const char* t : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Elu",
                        "Softplus", "Exp", "Sqrt", "Abs", "Mish", "Clip", "Gelu"})
    register_kernel(t, make_eltwise);
  register_kernel("Neg", make_neg);
  register_kernel("Identity", make_alias);
  register_kernel("Dropout", make_dropout);
  register_kernel("Log", make_libm<log_f>);
  register_kernel("Floor", make_libm<floor_f>);
  register_kernel("Ceil", make_libm<ceil_f>);
  register_kernel("Reciprocal", make_libm<reciprocal_f>);
  register_kernel("Erf", make_libm<erf_f>);
}

}  // namespace tandem::cpu

// Activations for training on oneDNN's eltwise_forward (forward_training) and
// eltwise_backward (from the source values), over the tensor as one vector,
// with the algorithm inference uses for the kind (cpu/post_ops.h).
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

// The kind's one oneDNN step (the one inference runs): a kind that needs
// two, or an output scale, has no eltwise backward of its own.
EltwiseStep step(const ops::Activation& p, const Tensor& x) {
  std::vector<EltwiseStep> steps = eltwise_steps(p);
  check_supported(steps.size() == 1 && steps[0].scale == 1.f,
                  std::string("CPU training has no ") + ops::activation_op_type(p.kind) + " activation",
                  op_context("eltwise", x));
  return steps[0];
}

struct Entry {
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

const Entry& entry(Context& c, const ops::Activation& p, const Tensor& x) {
  const EltwiseStep s = step(p, x);
  return c.cache.get<Entry>(cache_key("eltwise", x.dtype(), x.numel(), int(s.algorithm), s.alpha, s.beta), [&] {
    memory::desc m = plain_md(x.dtype(), {x.numel()});
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, s.algorithm, m, s.alpha, s.beta);
    dnnl::eltwise_forward::primitive_desc fpd(fd, user_scratchpad_attr(), engine());
    dnnl::eltwise_backward::desc bd(s.algorithm, m, m, s.alpha, s.beta);
    dnnl::eltwise_backward::primitive_desc bpd(bd, user_scratchpad_attr(), engine(), fpd);
    return Entry{dnnl::eltwise_forward(fpd), dnnl::eltwise_backward(bpd)};
  });
}

memory flat(const Tensor& t) { return plain_memory(t, {t.numel()}); }

}  // namespace

void eltwise_forward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& y) {
  const char* op = "eltwise_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  if (x.numel() == 0) return;
  guarded(op, x, [&] {
    run_primitive(entry(context(ctx), p, x).fwd,
                  {{DNNL_ARG_SRC, flat(x)}, {DNNL_ARG_DST, flat(y)}});
    stream().wait();
  });
}

namespace {

// oneDNN's clip and hardswish backward put their lower kink on the other
// side from PyTorch (clip: 0 at x = min; hardswish: 0 at x = -3): these
// kinds take the derivative every CUDA kernel takes (ops/activation_math.h).
bool pytorch_kinks(ops::ActivationKind k) {
  return k == ops::ActivationKind::clip || k == ops::ActivationKind::hard_swish;
}

void shared_derivative(const ops::Activation& p, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  const float* xs = x.data<float>();
  const float* ds = dy.data<float>();
  float* out = dx.data<float>();
  const int64_t n = x.numel();
  ops::with_activation_kind(p.kind, [&](auto k) {
    for (int64_t i = 0; i < n; ++i) out[i] = ds[i] * ops::activate_grad<decltype(k)::value>(p, xs[i]);
  });
}

}  // namespace

void eltwise_backward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& dy, const GradOut& dx) {
  const char* op = "eltwise_backward";
  require_f32(op, {&x, &dy});
  require_shape(op, dy, x.shape(), "dy");
  if (!dx.wanted() || x.numel() == 0) return;
  guarded(op, x, [&] {
    GradTarget t(dx, x.shape(), op);
    if (pytorch_kinks(p.kind)) {
      shared_derivative(p, x, dy, t.tensor());
    } else {
      run_primitive(entry(context(ctx), p, x).bwd, {{DNNL_ARG_SRC, flat(x)},
                                                    {DNNL_ARG_DIFF_DST, flat(dy)},
                                                    {DNNL_ARG_DIFF_SRC, flat(t.tensor())}});
      stream().wait();
    }
    t.commit();
  });
}

}  // namespace tandem::cpu::train

// Inverted dropout, plain C++ (oneDNN has none). The keep mask is
// ops/dropout.h's function of (seed, element index), shared with the
// CUDA table so both draw the same one.
//   x / y / dy / dx: any shape; saved: u8 [numel], 1 where kept.
namespace tandem::cpu::train {

namespace {

void check_p(const char* op, const ops::DropoutParams& p, const Tensor& t) {
  check(p.p >= 0 && p.p < 1, "dropout probability must be in [0, 1), got " + std::to_string(p.p),
        op_context(op, t));
}

}  // namespace

void dropout_forward(void*, const ops::DropoutParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = "dropout_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  check_p(op, p, x);
  int64_t n = x.numel();
  *saved = Tensor::empty(DType::u8, {n});
  ops::DropoutMask mask = ops::DropoutMask::of(p.p, p.seed);
  float scale = 1.f / (1.f - p.p);
  const float* xs = x.data<float>();
  float* ys = y.data<float>();
  uint8_t* keep = saved->data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    keep[i] = mask.keep(i);
    ys[i] = keep[i] ? xs[i] * scale : 0.f;
  }
}

void dropout_backward(void*, const ops::DropoutParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = "dropout_backward";
  require_f32(op, {&dy});
  check_p(op, p, dy);
  check(saved.dtype() == DType::u8 && saved.numel() == dy.numel(), "dropout's backward needs its forward's mask",
        op_context(op, dy));
  if (!dx.wanted()) return;
  GradTarget t(dx, dy.shape(), op);
  int64_t n = dy.numel();
  float scale = 1.f / (1.f - p.p);
  const uint8_t* keep = saved.data<uint8_t>();
  const float* g = dy.data<float>();
  float* out = t.tensor().data<float>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = keep[i] ? g[i] * scale : 0.f;
  t.commit();
}

}  // namespace tandem::cpu::train
