#include "ops/qconv.h"

#include <cmath>
#include <limits>

#include "ops/all_ops.h"
#include "ops/conv.h"
#include "ops/schema.h"

namespace tandem::ops {

namespace {

float positive_scale(const Attributes& a, const std::string& name) {
  float s = a.get_float(name, 1.f);
  check(std::isfinite(s) && s > 0.f,
        name + " must be positive and finite, got " + std::to_string(s));
  return s;
}

int64_t zero_point(const Attributes& a, const std::string& name, DType t) {
  int64_t z = a.get_int(name, 0);
  const int64_t lo = t == DType::u8 ? 0 : -128, hi = t == DType::u8 ? 255 : 127;
  check(z >= lo && z <= hi,
        name + " " + std::to_string(z) + " is outside " + std::string(dtype_name(t)) + "'s range");
  return z;
}

DType int8_type(const std::string& name, const std::string& attr) {
  check(name == "u8" || name == "i8", attr + " must be u8 or i8, got '" + name + "'");
  return name == "u8" ? DType::u8 : DType::i8;
}

}  // namespace

QConvParams qconv_params(const Attributes& a) {
  QConvParams p;
  p.x_scale = positive_scale(a, "x_scale");
  p.w_scales = a.get_floats("w_scales", {});
  check(!p.w_scales.empty(), "w_scales is missing");
  for (float s : p.w_scales)
    check(std::isfinite(s) && s > 0.f,
          "w_scales must be positive and finite, got " + std::to_string(s));
  std::string y = a.get_string("y_dtype", "f32");
  p.y_dtype = y == "f32" ? DType::f32 : int8_type(y, "y_dtype");
  if (p.y_dtype != DType::f32) {
    p.y_scale = positive_scale(a, "y_scale");
    p.y_zero_point = zero_point(a, "y_zero_point", p.y_dtype);
  }
  int64_t r = a.get_int("residual", 0);
  check(r >= 0 && r <= 2,
        "residual must be 0 (none), 1 (real) or 2 (quantized), got " + std::to_string(r));
  p.residual = QResidual(r);
  if (p.residual == QResidual::quantized) {
    p.r_scale = positive_scale(a, "r_scale");
    p.r_zero_point = a.get_int("r_zero_point", 0);
  }
  p.x_zero_point = a.get_int("x_zero_point", 0);
  p.activation = parse_fused_activation(a);
  return p;
}

void set_qconv_params(Attributes& a, const QConvParams& p) {
  a.set("x_scale", p.x_scale);
  a.set("x_zero_point", p.x_zero_point);
  a.set("w_scales", p.w_scales);
  a.set("y_dtype", std::string(p.y_dtype == DType::f32 ? "f32" : dtype_name(p.y_dtype)));
  a.set("y_scale", p.y_scale);
  a.set("y_zero_point", p.y_zero_point);
  a.set("residual", int64_t(p.residual));
  a.set("r_scale", p.r_scale);
  a.set("r_zero_point", p.r_zero_point);
}

namespace {

bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

std::vector<TensorDesc> infer_qconv(const InferContext& c) {
  const QConvParams p = qconv_params(c.attributes());
  const TensorDesc &x = c.inputs[0], &w = c.inputs[1];
  check(is_int8(x.dtype), "tandem.QConv input must be u8 or i8, got " + x.str());
  check(zero_point(c.attributes(), "x_zero_point", x.dtype) == p.x_zero_point,
        "x_zero_point out of range");
  check(w.dtype == DType::i8, "tandem.QConv weight must be i8, got " + w.str());
  ConvGeometry g = conv_geometry(c.attributes(), x.shape, w.shape);
  check(p.w_scales.size() == 1 || int64_t(p.w_scales.size()) == g.out_channels,
        "w_scales has " + std::to_string(p.w_scales.size()) + " values for " +
            std::to_string(g.out_channels) + " output channels");
  check(c.has_input(2) && c.inputs[2].dtype == DType::f32 && c.shape(2) == Shape{g.out_channels},
        "tandem.QConv needs an f32 bias [" + std::to_string(g.out_channels) + "]");
  TensorDesc y{p.y_dtype, g.output_shape()};
  const bool has_r = p.residual != QResidual::none;
  check(int(c.inputs.size()) == (has_r ? 4 : 3),
        "tandem.QConv with residual=" + std::to_string(int(p.residual)) + " takes " +
            std::to_string(has_r ? 4 : 3) + " inputs");
  if (has_r) {
    const TensorDesc& r = c.inputs[3];
    check(r.shape == y.shape, "residual " + r.str() + " must be shaped like the output " + y.str());
    if (p.residual == QResidual::real)
      check(r.dtype == DType::f32, "a real residual must be f32, got " + r.str());
    else {
      check(is_int8(r.dtype), "a quantized residual must be u8 or i8, got " + r.str());
      zero_point(c.attributes(), "r_zero_point", r.dtype);
    }
  }
  return {y};
}

}  // namespace

void register_qconv_schemas() { register_schema({kQConvOp, 3, 4, infer_qconv}); }

}  // namespace tandem::ops
