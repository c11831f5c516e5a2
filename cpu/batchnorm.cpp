// BatchNormalization (inference; training's batch norm entries follow it) on oneDNN's batch_normalization_forward with
// use_global_stats | use_scale | use_shift. Works in the layout X arrives in
// (plain, nhwc, nChw8c, nChw16c) and gives Y the same layout. Constant
// statistics are converted to f32 once at prepare; computed ones are bound
// at run time (they must be f32 then).
#include <cmath>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/norm.h"

namespace tandem::cpu {

namespace {

KernelPlan make_batchnorm(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16,
        "CPU BatchNormalization supports f32 and bf16, got " + x.str());
  ops::BatchNormParams p = ops::batchnorm_params(op.attributes(), x.shape);
  dnnl::memory::desc m = md(x);
  using flags = dnnl::normalization_flags;
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, m, p.epsilon,
                                            flags::use_global_stats | flags::use_scale | flags::use_shift);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  dnnl::batch_normalization_forward::primitive_desc pd(d, attr, engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::batch_normalization_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, m);
  k->bind_output(DNNL_ARG_DST, 0, m);
  // Inputs 1..4: scale, B, mean, var, each [C] and f32 inside oneDNN.
  dnnl::memory::desc channel_md({p.channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
  const int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (int i = 1; i <= 4; ++i) {
    if (op.constants[size_t(i)]) {
      k->bind_constant(args[i - 1], constant_memory(*op.constants[size_t(i)], channel_md));
    } else {
      check_supported(op.inputs[size_t(i)].dtype == DType::f32,
            "computed BatchNormalization parameters must be f32, got " + op.inputs[size_t(i)].str());
      k->bind_input(args[i - 1], i, channel_md);
    }
  }
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts = {x.layout, Layout::plain, Layout::plain, Layout::plain, Layout::plain};
  plan.output_layouts = {x.layout};
  return plan;
}

}  // namespace

void register_batchnorm_kernels() { register_kernel("BatchNormalization", make_batchnorm); }

}  // namespace tandem::cpu

// BatchNorm for training, plain C++ with statistics and gradient sums in
// double, as PyTorch's CPU kernels accumulate: oneDNN 2.6's primitives sum
// in float, and over a batch of 128 28x28 planes (100k values a channel)
// their rounding left the gradients of the layers below ~5e-3 off float64
// (PyTorch's fp32: ~2e-4), enough to part training runs within 20 steps.
// The passes are memory-bound and parallel over channels.
//   x / y / dy [N, C, S...] viewed as [N, C, S] (S: the extents after C);
//   gamma / beta / running stats [C];
//   saved [2, C]: the mean and biased variance the forward normalized with
//   (the running ones in eval mode).
// Training updates the running statistics (unbiased variance, PyTorch's
// momentum).
namespace tandem::cpu::train {

namespace {

struct Planes {
  int64_t n, c, s;  // x as [n, c, s]
  const float* at(const float* base, int64_t i, int64_t ch) const { return base + (i * c + ch) * s; }
  float* at(float* base, int64_t i, int64_t ch) const { return base + (i * c + ch) * s; }
  int64_t count() const { return n * s; }  // values per channel
};

Planes planes(const Tensor& x) { return {x.dim(0), x.dim(1), x.numel() / (x.dim(0) * x.dim(1))}; }

void check_inputs(const char* op, const Tensor& x, std::initializer_list<const Tensor*> per_channel) {
  require_f32(op, {&x});
  check(x.rank() >= 2, "batch norm wants x [N, C, ...]", op_context(op, x));
  for (const Tensor* t : per_channel) {
    require_f32(op, {t});
    require_shape(op, *t, {x.dim(1)}, "a per-channel tensor");
  }
}

// Mean, then the mean squared deviation from it (two passes: no
// cancellation of E[x^2] - E[x]^2).
void channel_stats(const float* x, const Planes& p, int64_t ch, float& mean, float& var) {
  double sum = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const float* v = p.at(x, i, ch);
    for (int64_t k = 0; k < p.s; ++k) sum += v[k];
  }
  const double m = sum / double(p.count());
  double sq = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const float* v = p.at(x, i, ch);
    for (int64_t k = 0; k < p.s; ++k) sq += (v[k] - m) * (v[k] - m);
  }
  mean = float(m);
  var = float(sq / double(p.count()));
}

void update_running(const ops::BatchNormParams& p, const float* mean, const float* var, int64_t channels,
                    int64_t count, const Tensor& running_mean, const Tensor& running_var) {
  float* rm = running_mean.data<float>();
  float* rv = running_var.data<float>();
  double unbias = double(count) / double(count - 1);
  for (int64_t c = 0; c < channels; ++c) {
    rm[c] = float((1 - p.momentum) * rm[c] + p.momentum * mean[c]);
    rv[c] = float((1 - p.momentum) * rv[c] + p.momentum * var[c] * unbias);
  }
}

void store(float* dst, int64_t i, float v, GradMode mode) { dst[i] = mode == GradMode::accumulate ? dst[i] + v : v; }

// Sum of dy and of dy * (x - mean) over one channel.
void gradient_sums(const float* x, const float* dy, const Planes& p, int64_t ch, double mean, double& sum,
                   double& dot) {
  sum = 0, dot = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const float* xv = p.at(x, i, ch);
    const float* g = p.at(dy, i, ch);
    for (int64_t k = 0; k < p.s; ++k) {
      sum += g[k];
      dot += g[k] * (xv[k] - mean);
    }
  }
}

}  // namespace

void batch_norm_forward(void*, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, const Tensor& y, Tensor* saved) {
  const char* op = "batch_norm_forward";
  check_inputs(op, x, {&gamma, &beta, &running_mean, &running_var});
  require_f32(op, {&y});
  require_shape(op, y, x.shape(), "y");
  const Planes d = planes(x);
  check(!p.training || d.count() > 1, "training batch norm needs more than one value per channel",
        op_context(op, x));
  *saved = Tensor::empty(DType::f32, {2, d.c});
  float* mean = saved->data<float>();
  float* var = mean + d.c;
  const float *xs = x.data<float>(), *g = gamma.data<float>(), *b = beta.data<float>();
  float* ys = y.data<float>();
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < d.c; ++ch) {
    if (p.training) channel_stats(xs, d, ch, mean[ch], var[ch]);
    else mean[ch] = running_mean.data<float>()[ch], var[ch] = running_var.data<float>()[ch];
    const ops::BatchNormAffine a = ops::batch_norm_affine(g[ch], b[ch], mean[ch], var[ch], p.epsilon);
    for (int64_t i = 0; i < d.n; ++i) {
      const float* in = d.at(xs, i, ch);
      float* out = d.at(ys, i, ch);
      for (int64_t k = 0; k < d.s; ++k) out[k] = in[k] * a.scale + a.shift;
    }
  }
  if (p.training) update_running(p, mean, var, d.c, d.count(), running_mean, running_var);
}

void batch_norm_backward(void*, const ops::BatchNormParams& p, const Tensor& x, const Tensor& gamma, const Tensor& saved,
                         const Tensor& dy, const GradOut& dx, const GradOut& dgamma, const GradOut& dbeta) {
  const char* op = "batch_norm_backward";
  check_inputs(op, x, {&gamma});
  require_f32(op, {&dy, &saved, &dx.t, &dgamma.t, &dbeta.t});
  require_shape(op, dy, x.shape(), "dy");
  require_shape(op, saved, {2, x.dim(1)}, "the saved statistics");
  if (dx.wanted()) require_shape(op, dx.t, x.shape(), "dx");
  if (dgamma.wanted()) require_shape(op, dgamma.t, {x.dim(1)}, "dgamma");
  if (dbeta.wanted()) require_shape(op, dbeta.t, {x.dim(1)}, "dbeta");
  const Planes d = planes(x);
  const float *xs = x.data<float>(), *g = dy.data<float>(), *mean = saved.data<float>(), *var = mean + d.c;
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < d.c; ++ch) {
    const double invstd = 1 / std::sqrt(double(var[ch]) + double(p.epsilon));
    double sum, dot;
    gradient_sums(xs, g, d, ch, mean[ch], sum, dot);
    if (dbeta.wanted()) store(dbeta.t.data<float>(), ch, float(sum), dbeta.mode);
    if (dgamma.wanted()) store(dgamma.t.data<float>(), ch, float(dot * invstd), dgamma.mode);
    if (!dx.wanted()) continue;
    // Training: dx = w * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)); eval: w * invstd * dy.
    const double n = double(d.count());
    const float k = p.training ? float(dot * invstd * invstd / n) : 0.f;
    const float grad_mean = p.training ? float(sum / n) : 0.f;
    const float scale = float(invstd * gamma.data<float>()[ch]);
    for (int64_t i = 0; i < d.n; ++i) {
      const float* xv = d.at(xs, i, ch);
      const float* gv = d.at(g, i, ch);
      float* out = d.at(dx.t.data<float>(), i, ch);
      for (int64_t j = 0; j < d.s; ++j)
        store(out, j, (gv[j] - grad_mean - (xv[j] - mean[ch]) * k) * scale, dx.mode);
    }
  }
}

}  // namespace tandem::cpu::train
