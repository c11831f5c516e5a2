// LayerNormalization (ops/norm.h) on oneDNN's layer_normalization_forward.
// X is viewed as [rows, cols] in plain layout, cols the normalized extents
// flattened, since oneDNN normalizes over the last dimension only. Scale and
// B become one f32 row each, constant ones spread over the row once at
// prepare. Mean and InvStdDev, when asked for, come from the training
// propagation kind, which writes the mean and the variance; the variance is
// turned into 1 / sqrt(var + epsilon) in place afterwards.
#include <omp.h>

#include <cmath>
#include <memory>
#include <vector>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/norm.h"

namespace tandem::cpu {

namespace {

class LayerNormKernel : public Kernel {
 public:
  // `variance`: where oneDNN writes the variance when only Mean is an
  // output (bound to the primitive already; a moved vector keeps its buffer).
  LayerNormKernel(std::unique_ptr<PrimitiveKernel> prim, std::vector<float> variance, int64_t rows, float epsilon,
                  bool inv_std_out)
      : prim_(std::move(prim)), variance_(std::move(variance)), rows_(rows), epsilon_(epsilon),
        inv_std_out_(inv_std_out) {}
  void run(const void* const* in, void* const* out, const RunContext& ctx) override {
    prim_->run(in, out, ctx);
    if (!inv_std_out_) return;
    float* v = static_cast<float*>(out[2]);
    for (int64_t r = 0; r < rows_; ++r) v[r] = 1.f / std::sqrt(v[r] + epsilon_);
  }
  size_t scratch_bytes() const override { return prim_->scratch_bytes(); }

 private:
  std::unique_ptr<PrimitiveKernel> prim_;
  std::vector<float> variance_;
  int64_t rows_;
  float epsilon_;
  bool inv_std_out_;
};

// Binds Scale (input 1, DNNL_ARG_SCALE) or B (input 2, DNNL_ARG_SHIFT): a
// constant spread over one row, or a computed f32 row bound at run time.
void bind_row(PrimitiveKernel& k, const OpDesc& op, size_t i, int arg, const ops::LayerNormParams& p) {
  dnnl::memory::desc row_md({p.cols}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
  if (const Tensor* c = op.constants[i]) {
    std::vector<float> v = ops::layernorm_row_values(*c, op.inputs[0].shape, p);
    Tensor t = Tensor::from_vector(v, {p.cols});
    k.bind_constant(arg, constant_memory(t, row_md));
    return;
  }
  check_supported(op.inputs[i].dtype == DType::f32 && op.inputs[i].numel() == p.cols,
                  "computed LayerNormalization " + std::string(i == 1 ? "Scale" : "B") +
                      " must be f32 with one value per normalized element, got " + op.inputs[i].str(),
                  op.context());
  k.bind_input(arg, int(i), row_md);
}

KernelPlan make_layernorm(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16,
                  "CPU LayerNormalization supports f32 and bf16, got " + x.str(), op.context());
  ops::LayerNormParams p = ops::layernorm_params(op.attributes(), x.shape);
  const bool stats = op.outputs.size() > 1;
  dnnl::memory::desc m = md(x.dtype, {p.rows, p.cols}, Layout::plain);
  dnnl::memory::desc stat_md({p.rows}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
  using flags = dnnl::normalization_flags;
  flags f = flags::use_scale;
  if (op.has_input(2)) f = f | flags::use_shift;
  auto prop = stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::layer_normalization_forward::desc d(prop, m, stat_md, p.epsilon, f);
  dnnl::layer_normalization_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
  auto prim = std::make_unique<PrimitiveKernel>(dnnl::layer_normalization_forward(pd), pd.scratchpad_desc());
  prim->bind_input(DNNL_ARG_SRC, 0, m);
  prim->bind_output(DNNL_ARG_DST, 0, m);
  bind_row(*prim, op, 1, DNNL_ARG_SCALE, p);
  if (op.has_input(2)) bind_row(*prim, op, 2, DNNL_ARG_SHIFT, p);
  std::vector<float> variance;
  if (stats) {
    prim->bind_output(DNNL_ARG_MEAN, 1, stat_md);
    if (op.outputs.size() > 2) prim->bind_output(DNNL_ARG_VARIANCE, 2, stat_md);
    else {
      variance.resize(size_t(p.rows));
      prim->bind_constant(DNNL_ARG_VARIANCE, dnnl::memory(stat_md, engine(), variance.data()));
    }
  }
  KernelPlan plan;
  plan.kernel = std::make_unique<LayerNormKernel>(std::move(prim), std::move(variance), p.rows, p.epsilon,
                                                  op.outputs.size() > 2);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts.assign(op.outputs.size(), Layout::plain);
  return plan;
}

}  // namespace

void register_layernorm_kernels() { register_kernel("LayerNormalization", make_layernorm); }

}  // namespace tandem::cpu

// Layer norm for training as a plain loop: oneDNN's layer_normalization
// normalizes the last axis only, and LayerNorm2d normalizes the channel
// axis of [N, C, H, W]. x is [rows, cols, inner]; each row's cols x inner
// block is walked column by column with the inner positions contiguous, so
// the strided vectors of LayerNorm2d run side by side across the pixels.
// Statistics and the backward's sums are accumulated in double and the
// results rounded once to float; the backward reads the forward's saved
// mean and 1 / sqrt(var + epsilon), as PyTorch's does.
namespace tandem::cpu::train {

namespace {

void check_operands(const char* op, const ops::LayerNormParams& p, const Tensor& x,
                    const Tensor& gamma, const Tensor& beta) {
  require_f32(op, {&x, &gamma, &beta});
  TANDEM_CHECK(p.rows >= 0 && p.cols > 0 && p.inner >= 1 && x.numel() == p.rows * p.cols * p.inner,
               "x must hold rows * cols * inner = " + std::to_string(p.rows) + " * " +
                   std::to_string(p.cols) + " * " + std::to_string(p.inner) + " values",
               op_context(op, x));
  require_shape(op, gamma, {p.cols}, "gamma");
  if (beta.defined()) require_shape(op, beta, {p.cols}, "beta");
}

// Writes v into a gradient element: overwrite or add.
inline void put(float& dst, double v, bool accumulate) {
  dst = accumulate ? float(dst + v) : float(v);
}

// One row's mean and 1 / sqrt(var + epsilon) per inner position (two passes:
// the variance as the mean of squared deviations, which does not cancel).
void row_statistics(const float* x, const ops::LayerNormParams& p, std::vector<double>& mean,
                    std::vector<double>& rstd) {
  const int64_t C = p.cols, I = p.inner;
  std::fill(mean.begin(), mean.end(), 0.0);
  std::fill(rstd.begin(), rstd.end(), 0.0);
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < I; ++i) mean[size_t(i)] += x[j * I + i];
  for (int64_t i = 0; i < I; ++i) mean[size_t(i)] /= double(C);
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < I; ++i) {
      const double d = x[j * I + i] - mean[size_t(i)];
      rstd[size_t(i)] += d * d;
    }
  for (int64_t i = 0; i < I; ++i)
    rstd[size_t(i)] = 1.0 / std::sqrt(rstd[size_t(i)] / double(C) + p.epsilon);
}

}  // namespace

void layer_norm_forward(void*, const ops::LayerNormParams& p, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta, const Tensor& y, Tensor* saved) {
  const char* op = "layer_norm_forward";
  check_operands(op, p, x, gamma, beta);
  require_f32(op, {&y});
  require_shape(op, y, x.shape(), "y");
  const int64_t C = p.cols, I = p.inner;
  Tensor stats = Tensor::empty(DType::f32, {2, p.rows * I});
  const float *xs = x.data<float>(), *g = gamma.data<float>(),
              *b = beta.defined() ? beta.data<float>() : nullptr;
  float *ys = y.data<float>(), *mean_out = stats.data<float>(), *rstd_out = mean_out + p.rows * I;
#pragma omp parallel
  {
    std::vector<double> mean(static_cast<size_t>(I)), rstd(static_cast<size_t>(I));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r) {
      const float* xr = xs + r * C * I;
      float* yr = ys + r * C * I;
      row_statistics(xr, p, mean, rstd);
      for (int64_t j = 0; j < C; ++j)
        for (int64_t i = 0; i < I; ++i) {
          const double v = (xr[j * I + i] - mean[size_t(i)]) * rstd[size_t(i)] * g[j];
          yr[j * I + i] = float(b ? v + b[j] : v);
        }
      for (int64_t i = 0; i < I; ++i) {
        mean_out[r * I + i] = float(mean[size_t(i)]);
        rstd_out[r * I + i] = float(rstd[size_t(i)]);
      }
    }
  }
  if (saved) *saved = std::move(stats);
}

namespace {

// dx of one row: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
void row_input_gradient(const float* x, const float* dy, const float* gamma, const float* mean,
                        const float* rstd, const ops::LayerNormParams& p,
                        std::vector<double>& sum_g, std::vector<double>& sum_gx, float* dx,
                        bool accumulate) {
  const int64_t C = p.cols, I = p.inner;
  std::fill(sum_g.begin(), sum_g.end(), 0.0);
  std::fill(sum_gx.begin(), sum_gx.end(), 0.0);
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < I; ++i) {
      const double g = double(dy[j * I + i]) * gamma[j];
      sum_g[size_t(i)] += g;
      sum_gx[size_t(i)] += g * (x[j * I + i] - double(mean[i])) * rstd[i];
    }
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < I; ++i) {
      const double xhat = (x[j * I + i] - double(mean[i])) * rstd[i];
      const double g = double(dy[j * I + i]) * gamma[j];
      put(dx[j * I + i], rstd[i] * (g - (sum_g[size_t(i)] + xhat * sum_gx[size_t(i)]) / double(C)),
          accumulate);
    }
}

// dgamma[j] = sum of dy * xhat and dbeta[j] = sum of dy over rows and inner
// positions: partial sums per thread, added up in a fixed thread order.
void parameter_gradients(const ops::LayerNormParams& p, const float* xs, const float* dys,
                         const float* mean, const float* rstd, const GradOut& dgamma,
                         const GradOut& dbeta) {
  const int64_t C = p.cols, I = p.inner;
  std::vector<std::vector<double>> partial;
#pragma omp parallel
  {
#pragma omp single
    partial.assign(size_t(omp_get_num_threads()), std::vector<double>(size_t(2 * C), 0.0));
    std::vector<double>& acc = partial[size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t j = 0; j < C; ++j) {
        const float* x = xs + (r * C + j) * I;
        const float* dy = dys + (r * C + j) * I;
        double dg = 0, db = 0;
        for (int64_t i = 0; i < I; ++i) {
          dg += double(dy[i]) * (x[i] - double(mean[r * I + i])) * rstd[r * I + i];
          db += dy[i];
        }
        acc[size_t(j)] += dg;
        acc[size_t(C + j)] += db;
      }
  }
  std::vector<double> total(size_t(2 * C), 0.0);
  for (const std::vector<double>& a : partial)
    for (size_t k = 0; k < total.size(); ++k) total[k] += a[k];
  for (int64_t j = 0; j < C; ++j) {
    if (dgamma.wanted())
      put(dgamma.t.data<float>()[j], total[size_t(j)], dgamma.mode == GradMode::accumulate);
    if (dbeta.wanted())
      put(dbeta.t.data<float>()[j], total[size_t(C + j)], dbeta.mode == GradMode::accumulate);
  }
}

}  // namespace

void layer_norm_backward(void*, const ops::LayerNormParams& p, const Tensor& x, const Tensor& gamma,
                         const Tensor& saved, const Tensor& dy, const GradOut& dx,
                         const GradOut& dgamma, const GradOut& dbeta) {
  const char* op = "layer_norm_backward";
  check_operands(op, p, x, gamma, Tensor());
  require_f32(op, {&saved, &dy, &dx.t, &dgamma.t, &dbeta.t});
  require_shape(op, saved, {2, p.rows * p.inner}, "saved");
  require_shape(op, dy, x.shape(), "dy");
  if (dx.wanted()) require_shape(op, dx.t, x.shape(), "dx");
  if (dgamma.wanted()) require_shape(op, dgamma.t, {p.cols}, "dgamma");
  if (dbeta.wanted()) require_shape(op, dbeta.t, {p.cols}, "dbeta");
  const int64_t C = p.cols, I = p.inner;
  const float *xs = x.data<float>(), *dys = dy.data<float>(), *g = gamma.data<float>();
  const float *mean = saved.data<float>(), *rstd = mean + p.rows * I;
  if (dx.wanted()) {
    const bool acc = dx.mode == GradMode::accumulate;
    float* dxs = dx.t.data<float>();
#pragma omp parallel
    {
      std::vector<double> sum_g(static_cast<size_t>(I)), sum_gx(static_cast<size_t>(I));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < p.rows; ++r)
        row_input_gradient(xs + r * C * I, dys + r * C * I, g, mean + r * I, rstd + r * I, p, sum_g,
                           sum_gx, dxs + r * C * I, acc);
    }
  }
  if (dgamma.wanted() || dbeta.wanted()) parameter_gradients(p, xs, dys, mean, rstd, dgamma, dbeta);
}

}  // namespace tandem::cpu::train
