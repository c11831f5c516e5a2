// LayerNormalization (ops/norm.h) on oneDNN's layer_normalization_forward.
// X is viewed as [rows, cols] in plain layout, cols the normalized extents
// flattened, since oneDNN normalizes over the last dimension only. Scale and
// B become one f32 row each, constant ones spread over the row once at
// prepare. Mean and InvStdDev, when asked for, come from the training
// propagation kind, which writes the mean and the variance; the variance is
// turned into 1 / sqrt(var + epsilon) in place afterwards.
#include <cmath>
#include <memory>
#include <vector>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
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
