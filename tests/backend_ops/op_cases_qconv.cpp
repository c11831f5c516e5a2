// tandem.QConv against the QDQ model it stands for, computed in float64:
// dequantize x, the weights and a quantized residual, convolve, add the
// bias and the residual, apply the activation, quantize the result half to
// even and saturate (ONNX's QuantizeLinear) or leave it real.
#include <cmath>

#include "ops/conv.h"
#include "ops/qconv.h"
#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"

namespace tandem::backend_ops {

namespace {

Tensor integers(DType t, const Shape& shape, uint64_t seed) {
  const bool u = t == DType::u8;
  Tensor r = uniform(shape, seed, u ? 0.f : -128.f, u ? 256.f : 128.f);
  Tensor q = Tensor::empty(t, shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    const float v = std::floor(r.data<float>()[i]);
    if (u)
      q.data<uint8_t>()[i] = uint8_t(v);
    else
      q.data<int8_t>()[i] = int8_t(v);
  }
  return q;
}

double activate(const ops::Activation& a, double v) {
  switch (a.kind) {
    case ops::ActivationKind::relu:
      return v > 0 ? v : 0;
    case ops::ActivationKind::clip:
      return std::min(std::max(v, double(a.alpha)), double(a.beta));
    default:
      return v;
  }
}

std::vector<Tensor> qconv_ref(const Attributes& attrs, const std::vector<Tensor>& in) {
  const ops::QConvParams p = ops::qconv_params(attrs);
  const ops::ConvGeometry g = ops::conv_geometry(attrs, in[0].shape(), in[1].shape());
  const Shape y_shape = g.output_shape();
  const std::vector<double> x = widen(in[0]), w = widen(in[1]), b = widen(in[2]);
  const std::vector<double> r = in.size() > 3 ? widen(in[3]) : std::vector<double>();
  const ops::Window& win = g.window;
  const int64_t n = y_shape[0], m = y_shape[1], oh = y_shape[2], ow = y_shape[3];
  const int64_t c = g.in_channels, h = g.in_spatial[0], wd = g.in_spatial[1];
  const int64_t cg = c / g.group, mg = m / g.group, kh = win.kernel[0], kw = win.kernel[1];
  std::vector<double> y(size_t(shape_numel(y_shape)));
  for (int64_t in_ = 0; in_ < n; ++in_)
    for (int64_t o = 0; o < m; ++o) {
      const double ws = p.w_scales[p.w_scales.size() > 1 ? size_t(o) : 0];
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                const int64_t yy = i * win.strides[0] - win.pads_begin[0] + a * win.dilations[0];
                const int64_t xx = j * win.strides[1] - win.pads_begin[1] + bb * win.dilations[1];
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                const int64_t chan = (o / mg) * cg + ci;
                const double xv =
                    (x[size_t(((in_ * c + chan) * h + yy) * wd + xx)] - double(p.x_zero_point)) *
                    double(p.x_scale);
                acc += xv * w[size_t(((o * cg + ci) * kh + a) * kw + bb)] * ws;
              }
          const size_t at = size_t(((in_ * m + o) * oh + i) * ow + j);
          double v = acc + b[size_t(o)];
          if (p.residual == ops::QResidual::real) v += r[at];
          if (p.residual == ops::QResidual::quantized)
            v += (r[at] - double(p.r_zero_point)) * double(p.r_scale);
          y[at] = activate(p.activation, v);
        }
    }
  if (p.y_dtype == DType::f32) return {f64_tensor(y_shape, y)};
  const double lo = p.y_dtype == DType::u8 ? 0 : -128, hi = p.y_dtype == DType::u8 ? 255 : 127;
  Tensor q = Tensor::empty(p.y_dtype, y_shape);
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = std::min(
        hi, std::max(lo, std::nearbyint(y[i] / double(p.y_scale)) + double(p.y_zero_point)));
    if (p.y_dtype == DType::u8)
      q.data<uint8_t>()[i] = uint8_t(v);
    else
      q.data<int8_t>()[i] = int8_t(v);
  }
  return {q};
}

struct QConvVariant {
  const char* label;
  DType x, y;
  int64_t x_zero_point, group;
  std::vector<float> w_scales;  // one, or one per output channel
  ops::QResidual residual;
  const char* activation;
};

// The form the GPU's integer convolution takes (cuda/qconv.cpp): s8 with
// zero points 0, one group, ReLU or none, channels in multiples of 16.
void add_s8_qconv_cases(std::vector<OpCase>& cases, Seeds& seed) {
  struct S8Variant {
    const char* label;
    DType y;
    ops::QResidual residual;
    const char* activation;
    int64_t kernel, stride;
  };
  const std::vector<S8Variant> variants = {
      {"s8-relu-s8-out", DType::i8, ops::QResidual::none, "Relu", 3, 1},
      {"s8-f32-out", DType::f32, ops::QResidual::none, "", 3, 1},
      {"s8-quantized-residual-relu", DType::i8, ops::QResidual::quantized, "Relu", 3, 1},
      {"s8-real-residual-s8-out", DType::i8, ops::QResidual::real, "", 3, 1},
      {"s8-real-residual-relu-f32-out", DType::f32, ops::QResidual::real, "Relu", 3, 1},
      {"s8-1x1-stride-2", DType::i8, ops::QResidual::none, "Relu", 1, 2}};
  std::vector<float> per_channel(32);
  for (size_t i = 0; i < per_channel.size(); ++i) per_channel[i] = 0.002f + 0.0005f * float(i % 9);
  for (const S8Variant& v : variants) {
    const int64_t pad = v.kernel / 2;
    const Shape x{2, 16, 7, 9}, w{32, 16, v.kernel, v.kernel};
    const Shape y{2, 32, (7 + 2 * pad - v.kernel) / v.stride + 1, (9 + 2 * pad - v.kernel) / v.stride + 1};
    OpCase c(ops::kQConvOp, v.label);
    c.in(integers(DType::i8, x, seed()))
        .constant_in(integers(DType::i8, w, seed()))
        .constant_in(uniform({32}, seed()));
    ops::QConvParams p;
    p.x_scale = 0.02f;
    p.w_scales = per_channel;
    p.y_dtype = v.y;
    p.y_scale = 0.03f;
    p.residual = v.residual;
    p.r_scale = 0.025f;
    set_qconv_params(c.attrs, p);
    c.attr("pads", std::vector<int64_t>{pad, pad, pad, pad}).attr("strides", std::vector<int64_t>{v.stride, v.stride});
    c.attr("activation", std::string(v.activation));
    if (v.residual == ops::QResidual::real) c.in(uniform(y, seed()));
    if (v.residual == ops::QResidual::quantized) c.in(integers(DType::i8, y, seed()));
    c.f32_only().ref([attrs = c.attrs](const std::vector<Tensor>& in) { return qconv_ref(attrs, in); });
    cases.push_back(c);
  }
}

}  // namespace

void add_qconv_cases(std::vector<OpCase>& cases) {
  Seeds seed{4500};
  const std::vector<float> per_channel{0.004f, 0.006f, 0.005f, 0.003f,
                                       0.007f, 0.002f, 0.004f, 0.006f};
  const std::vector<QConvVariant> variants = {
      {"u8-zero-point-f32-out", DType::u8, DType::f32, 100, 1, {0.005f}, ops::QResidual::none, ""},
      {"u8-per-channel-relu-u8-out", DType::u8, DType::u8, 0, 1, per_channel, ops::QResidual::none,
       "Relu"},
      {"i8-quantized-residual", DType::i8, DType::u8, -3, 1, per_channel, ops::QResidual::quantized,
       "Relu"},
      {"u8-real-residual-u8-out", DType::u8, DType::u8, 7, 1, per_channel, ops::QResidual::real,
       ""},
      {"depthwise-clip-i8-out", DType::u8, DType::i8, 128, 8, per_channel, ops::QResidual::none,
       "Clip"}};
  for (const QConvVariant& v : variants) {
    const Shape x{2, 8, 7, 9}, w{8, 8 / v.group, 3, 3}, y{2, 8, 7, 9};
    OpCase c(ops::kQConvOp, v.label);
    c.in(integers(v.x, x, seed()))
        .constant_in(integers(DType::i8, w, seed()))
        .constant_in(uniform({8}, seed()));
    ops::QConvParams p;
    p.x_scale = 0.02f;
    p.x_zero_point = v.x_zero_point;
    p.w_scales = v.w_scales;
    p.y_dtype = v.y;
    p.y_scale = 0.03f;
    p.y_zero_point = v.y == DType::u8 ? 5 : -2;
    p.residual = v.residual;
    p.r_scale = 0.025f;
    p.r_zero_point = 4;
    set_qconv_params(c.attrs, p);
    c.attr("pads", std::vector<int64_t>{1, 1, 1, 1}).attr("group", v.group);
    c.attr("activation", std::string(v.activation));
    if (std::string(v.activation) == "Clip")
      c.attr("activation_params", std::vector<float>{-1.f, 2.f});
    if (v.residual == ops::QResidual::real) c.in(uniform(y, seed()));
    if (v.residual == ops::QResidual::quantized) c.in(integers(DType::u8, y, seed()));
    c.f32_only().ref(
        [attrs = c.attrs](const std::vector<Tensor>& in) { return qconv_ref(attrs, in); });
    cases.push_back(c);
  }
  add_s8_qconv_cases(cases, seed);
}

}  // namespace tandem::backend_ops
