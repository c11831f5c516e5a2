// tandem.QConv (ops/qconv.h) on oneDNN's integer convolution.
//
// oneDNN 2.x computes, per output element,
//   acc = sum((x - x_zero_point) * w) + bias        (bias in acc's units)
//   v   = output_scale[oc] * acc, then the post-ops, then + dst_zero_point,
//         rounded and saturated to the destination type.
// So the output scale is x_scale * w_scale (v in real units), the bias is
// divided by the same, the residual and activation post-ops run on real
// values, and a last linear post-op divides by y_scale before the zero
// point is added: any activation works, not only the ones that commute
// with scaling.
//
// Layout: integer activations are channels-last. On AVX-512 VNNI (and AMX)
// oneDNN's integer kernels (brgconv) take nhwc; nChw16c and plain get only
// its reference loops.
//
// A quantized residual is a sum post-op, which reads the destination
// buffer: when the residual's buffer cannot become the output (another node
// still reads it), the kernel copies it there first.
#include "ops/qconv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/dnnl_conv.h"
#include "cpu/post_ops.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/fake_quant.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;
using conv_pd = dnnl::convolution_forward::primitive_desc;

struct QConvProblem {
  ops::ConvGeometry g;
  ops::QConvParams q;
  TensorDesc x, y;
  DType r_dtype = DType::f32;
  DnnlConv conv;
  bool residual_in_place = false;
};

QConvProblem describe(const OpDesc& op) {
  QConvProblem p;
  p.x = op.inputs[0];
  p.y = op.outputs[0];
  p.q = ops::qconv_params(op.attributes());
  check(op.constants.size() > 2 && op.constants[1] && op.constants[2],
        "tandem.QConv needs constant weights and bias on the CPU");
  p.g = ops::conv_geometry(op.attributes(), p.x.shape, op.inputs[1].shape);
  p.conv = DnnlConv::of(p.g, op.inputs[1].shape);
  if (p.q.residual != ops::QResidual::none) p.r_dtype = op.inputs[3].dtype;
  check_supported(p.q.residual != ops::QResidual::real || integer_conv_takes_float_residual(),
                  "a float residual on an integer convolution: oneDNN adds it wrong on this CPU");
  p.residual_in_place = p.q.residual == ops::QResidual::quantized && op.is_reusable(3);
  return p;
}

// x_scale * w_scale per output channel (or one for all).
std::vector<float> real_scales(const ops::QConvParams& q) {
  std::vector<float> s(q.w_scales);
  for (float& v : s) v *= q.x_scale;
  return s;
}

conv_pd make_pd(const QConvProblem& p, Layout layout) {
  TensorDesc x = p.x, y = p.y;
  x.layout = y.layout = layout;
  const memory::desc src = md(x), dst = md(y);
  const ops::QConvParams& q = p.q;
  dnnl::primitive_attr attr = user_scratchpad_attr();
  std::vector<float> scales = real_scales(q);
  attr.set_output_scales(scales.size() > 1 ? 1 << 1 : 0, scales);
  if (q.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {int32_t(q.x_zero_point)});
  dnnl::post_ops po;
  // A real residual is f32 in the output's layout, whatever the output's type.
  if (q.residual == ops::QResidual::real)
    po.append_binary(dnnl::algorithm::binary_add, md(DType::f32, p.y.shape, layout));
  if (q.residual == ops::QResidual::quantized)
    po.append_sum(q.r_scale, int32_t(q.r_zero_point), to_dnnl(p.r_dtype));
  append_activation(po, q.activation);
  if (q.y_dtype != DType::f32) {
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f / q.y_scale, 0.f);
    if (q.y_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {int32_t(q.y_zero_point)});
  }
  attr.set_post_ops(po);
  memory::desc wei = p.conv.weights_md(memory::data_type::s8, true);
  auto d = p.conv.forward(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          src, wei, p.conv.bias_md(memory::data_type::f32), dst);
  return conv_pd(d, attr, engine());
}

struct QConvChoice {
  conv_pd pd;
  Layout layout = Layout::plain;
};

// nhwc where oneDNN has a JIT kernel for it, else whatever layout it has one
// for, else its reference loops in plain.
QConvChoice choose(const QConvProblem& p) {
  std::vector<Layout> layouts{Layout::plain};
  if (p.x.shape.size() == 4) layouts = {Layout::nhwc, Layout::blocked16, Layout::plain};
  std::optional<QConvChoice> fallback;
  for (Layout l : layouts) {
    try {
      QConvChoice c{make_pd(p, l), l};
      if (!is_reference(c.pd.impl_info_str())) return c;
      if (!fallback) fallback = c;
    } catch (const dnnl::error&) {
      // no implementation for this layout; try the next
    }
  }
  check(fallback.has_value(),
        "oneDNN has no integer convolution for " + p.x.str() + " -> " + p.y.str());
  return *fallback;
}

// The bias in the accumulator's units: oneDNN adds it before the output
// scale.
Tensor accumulator_bias(const Tensor& bias, const ops::QConvParams& q) {
  std::vector<float> s = real_scales(q);
  Tensor b = bias.clone();
  float* v = b.data<float>();
  for (int64_t i = 0; i < b.numel(); ++i) v[i] /= s[s.size() > 1 ? size_t(i) : 0];
  return b;
}

// The primitive, after copying a quantized residual into the output buffer
// when the executor could not hand over the residual's own.
class QConvKernel : public Kernel {
 public:
  QConvKernel(std::unique_ptr<PrimitiveKernel> prim, size_t residual_bytes)
      : prim_(std::move(prim)), residual_bytes_(residual_bytes) {}
  void run(const void* const* in, void* const* out, const RunContext& ctx) override {
    if (residual_bytes_ > 0 && in[3] != out[0]) std::memcpy(out[0], in[3], residual_bytes_);
    prim_->run(in, out, ctx);
  }
  size_t scratch_bytes() const override { return prim_->scratch_bytes(); }

 private:
  std::unique_ptr<PrimitiveKernel> prim_;
  size_t residual_bytes_;
};

KernelPlan make_qconv(const OpDesc& op) {
  QConvProblem p = describe(op);
  QConvChoice c = choose(p);
  const conv_pd& pd = c.pd;
  auto k = std::make_unique<PrimitiveKernel>(dnnl::convolution_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, pd.src_desc());
  k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(*op.constants[1], pd.weights_desc()));
  k->bind_constant(DNNL_ARG_BIAS,
                   constant_memory(accumulator_bias(*op.constants[2], p.q), pd.bias_desc()));
  if (p.q.residual == ops::QResidual::real)
    k->bind_input(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, 3,
                  md(DType::f32, p.y.shape, c.layout));
  k->bind_output(DNNL_ARG_DST, 0, pd.dst_desc());
  const size_t copy = p.q.residual == ops::QResidual::quantized ? pd.dst_desc().get_size() : 0;
  KernelPlan plan;
  plan.kernel = std::make_unique<QConvKernel>(std::move(k), copy);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = c.layout;
  if (p.q.residual != ops::QResidual::none) plan.input_layouts[3] = c.layout;
  if (p.residual_in_place) plan.inplace_input = 3;
  plan.output_layouts = {c.layout};
  return plan;
}

}  // namespace

void register_qconv_kernels() { register_kernel(ops::kQConvOp, make_qconv); }

}  // namespace tandem::cpu

// Conv2d's forward on integers for quantization-aware training (the host
// side of a split layer; ops/train_backend.h's qconv2d_forward). x and w
// arrive as their fake quantizers' float values; each is turned back into
// its integers, channels-last u8 for x (the layout oneDNN's VNNI kernels
// take) and s8 for w, checking that every value sits exactly on its grid.
// The sums are exact int32, written channels-last; one pass then applies
// each output channel's real scale and bias and returns y to plain. The
// zero point changes as the observer moves, so it is a runtime argument:
// the primitive is built once per shape.
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

struct QForwardEntry {
  DnnlConv conv;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

const QForwardEntry& qforward_entry(Context& c, const ops::Conv2dParams& p, const Shape& x,
                                    const Shape& w, bool zero_point) {
  const std::string k =
      cache_key("qconv2d_fwd", x, w, zero_point, p.groups, p.stride[0], p.stride[1], p.padding[0],
                p.padding[1], p.dilation[0], p.dilation[1]);
  return c.cache.get<QForwardEntry>(k, [&] {
    DnnlConv conv = DnnlConv::of(p, w);
    const Shape y = ops::conv2d_output_shape(p, x, w);
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    auto desc =
        conv.forward(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                     md(DType::u8, x, Layout::nhwc), conv.weights_md(memory::data_type::s8, true),
                     memory::desc(), md(DType::i32, y, Layout::nhwc));
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
    return QForwardEntry{conv, pd, dnnl::convolution_forward(pd)};
  });
}

void check_qconv_inputs(const char* op, const ops::Conv2dParams& p, const ops::QConvParams& q,
                        const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  const ErrorContext where = op_context(op, x);
  require_f32(op, {&x, &w, &b, &y});
  require_shape(op, y, ops::conv2d_output_shape(p, x.shape(), w.shape()), "y");
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
  check(q.w_scales.size() == size_t(w.dim(0)),
        std::to_string(q.w_scales.size()) + " weight scales for " + std::to_string(w.dim(0)) +
            " output channels",
        where);
  check(q.x_scale > 0 && std::isfinite(q.x_scale) && q.x_zero_point >= 0 && q.x_zero_point <= 255,
        "x's scale must be positive and finite and its zero point in 0..255", where);
  for (float s : q.w_scales)
    check(s > 0 && std::isfinite(s), "weight scales must be positive and finite", where);
  check(q.y_dtype == DType::f32 && q.residual == ops::QResidual::none &&
            q.activation.kind == ops::ActivationKind::none,
        "the training integer convolution writes f32 with no residual or activation", where);
}

// The integer of a fake-quantized value (ops/fake_quant.h's rounding), and
// false when dequantizing it does not give v back bit for bit.
inline bool on_grid(float v, float scale, int32_t zero_point, int32_t lo, int32_t hi, int32_t& q) {
  const int64_t r = ops::quantized(v, scale, zero_point);
  q = int32_t(std::clamp<int64_t>(r, lo, hi));
  return r == q && float(q - zero_point) * scale == v;
}

// x [N, C, H, W] f32 -> u8 [N, H, W, C].
bool quantize_input(const Tensor& x, const ops::QConvParams& q, uint8_t* out) {
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  const float* src = x.data<float>();
  const int32_t zp = int32_t(q.x_zero_point);
  bool ok = true;
#pragma omp parallel for collapse(2) schedule(static) reduction(&& : ok)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k) {
      const float* row = src + (i * c + k) * hw;
      uint8_t* dst = out + i * hw * c + k;
      for (int64_t j = 0; j < hw; ++j) {
        int32_t v;
        ok = on_grid(row[j], q.x_scale, zp, 0, 255, v) && ok;
        dst[j * c] = uint8_t(v);
      }
    }
  return ok;
}

// w [M, ...] f32 -> s8, same order.
bool quantize_weights(const Tensor& w, const ops::QConvParams& q, int8_t* out) {
  const int64_t m = w.dim(0), per = w.numel() / m;
  const float* src = w.data<float>();
  bool ok = true;
  for (int64_t k = 0; k < m; ++k)
    for (int64_t j = 0; j < per; ++j) {
      int32_t v;
      ok = on_grid(src[k * per + j], q.w_scales[size_t(k)], 0, -128, 127, v) && ok;
      out[k * per + j] = int8_t(v);
    }
  return ok;
}

// y[n, m, :, :] = acc[n, :, :, m] * x_scale * w_scale[m] + b[m].
void scale_to_plain(const int32_t* acc, const ops::QConvParams& q, const Tensor& b,
                    const Tensor& y) {
  const int64_t n = y.dim(0), m = y.dim(1), hw = y.dim(2) * y.dim(3);
  std::vector<float> s(q.w_scales);
  for (float& v : s) v *= q.x_scale;
  const float* bias = b.defined() ? b.data<float>() : nullptr;
  float* out = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < m; ++c) {
      const int32_t* src = acc + i * hw * m + c;
      float* dst = out + (i * m + c) * hw;
      const float sc = s[size_t(c)], add = bias ? bias[c] : 0.f;
      for (int64_t j = 0; j < hw; ++j) dst[j] = float(src[j * m]) * sc + add;
    }
}

}  // namespace

bool qconv2d_forward(void* ctx, const ops::Conv2dParams& p, const ops::QConvParams& q,
                     const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  const char* op = "qconv2d_forward";
  check_qconv_inputs(op, p, q, x, w, b, y);
  Tensor xq = Tensor::empty(DType::u8, x.shape());  // channels-last bytes
  Tensor wq = Tensor::empty(DType::i8, w.shape());
  if (!quantize_input(x, q, xq.data<uint8_t>()) || !quantize_weights(w, q, wq.data<int8_t>()))
    return false;
  return guarded(op, x, [&] {
    const bool zero_point = q.x_zero_point != 0;
    const QForwardEntry& e = qforward_entry(context(ctx), p, x.shape(), w.shape(), zero_point);
    Tensor acc = Tensor::empty(DType::i32, y.shape());  // channels-last bytes
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(e.pd.src_desc(), engine(), xq.raw())},
        {DNNL_ARG_WEIGHTS, in_layout(plain_memory(wq, e.conv.weights), e.pd.weights_desc())},
        {DNNL_ARG_DST, memory(e.pd.dst_desc(), engine(), acc.raw())}};
    int32_t zp = int32_t(q.x_zero_point);
    if (zero_point)
      args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] =
          memory(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), engine(), &zp);
    run_primitive(e.prim, args);
    stream().wait();
    scale_to_plain(acc.data<int32_t>(), q, b, y);
    return true;
  });
}

}  // namespace tandem::cpu::train
