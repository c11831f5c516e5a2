// BatchNormalization (inference) on oneDNN's batch_normalization_forward with
// use_global_stats | use_scale | use_shift. Works in the layout X arrives in
// (plain, nhwc, nChw8c, nChw16c) and gives Y the same layout. Constant
// statistics are converted to f32 once at prepare; computed ones are bound
// at run time (they must be f32 then).
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
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
