// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point),
// y's dtype the zero point's (u8 without one); DequantizeLinear:
// y = (x - zero_point) * scale in f32. Per tensor or along `axis` (default 1).
#include "ops/quantize.h"

#include <cmath>
#include <string>

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

QuantAxis quant_axis(const Attributes& a, const Shape& x, const Shape& scale, const Shape* zero_point) {
  check(scale.size() <= 1, "the scale must be a scalar or 1-D, got " + shape_str(scale));
  check(!zero_point || *zero_point == scale, "the zero point's shape " + (zero_point ? shape_str(*zero_point) : "") +
                                                 " differs from the scale's " + shape_str(scale));
  QuantAxis q;
  if (scale.empty() || scale[0] == 1) {  // per tensor
    q.inner = shape_numel(x);
    return q;
  }
  const int64_t rank = int64_t(x.size());
  const size_t axis = size_t(normalize_axis(a.get_int("axis", 1), rank));
  check(x[axis] == scale[0], "a per-axis scale of " + std::to_string(scale[0]) + " values for axis " +
                                 std::to_string(axis) + " of " + shape_str(x));
  // Checked products (shape_numel): the extents before and after the axis
  // can overflow where the whole's product is 0.
  q.outer = shape_numel(Shape(x.begin(), x.begin() + std::ptrdiff_t(axis)));
  q.channels = scale[0];
  q.inner = shape_numel(Shape(x.begin() + std::ptrdiff_t(axis) + 1, x.end()));
  return q;
}

namespace {

// A scale of zero, NaN or infinity maps every value to one level, or to
// NaN: a damaged or hand-edited model, refused here rather than run.
void check_constant_scale(const InferContext& c) {
  const Tensor* scale = c.constants[1];
  if (!scale) return;
  for (int64_t i = 0; i < scale->numel(); ++i) {
    const double v = scale->scalar_at(i);
    check(std::isfinite(v) && v != 0, "scale[" + std::to_string(i) + "] is " + std::to_string(v) +
                                          ": a scale must be finite and non-zero", c.context());
  }
}

void check_qparams(const InferContext& c, bool quantize) {
  check(c.inputs[1].dtype == DType::f32, "the scale must be f32, got " + std::string(dtype_name(c.inputs[1].dtype)),
        c.context());
  check_constant_scale(c);
  if (c.has_input(2)) {
    const DType z = c.inputs[2].dtype;
    check(z == DType::u8 || z == DType::i8 || (!quantize && z == DType::i32),
          "the zero point must be u8 or i8, got " + std::string(dtype_name(z)), c.context());
    // ONNX: an int32 input (a bias) is dequantized with a zero point of 0.
    if (const Tensor* zp = c.constants[2]; zp && z == DType::i32)
      for (int64_t i = 0; i < zp->numel(); ++i)
        check(zp->scalar_at(i) == 0, "an int32 zero point must be 0, zero_point[" + std::to_string(i) + "] is " +
                                         std::to_string(int64_t(zp->scalar_at(i))), c.context());
  }
  if (shape_is_static(c.shape(0))) quant_axis(c.attributes(), c.shape(0), c.shape(1), c.has_input(2) ? &c.shape(2) : nullptr);
}

std::vector<TensorDesc> infer_quantize(const InferContext& c) {
  check(c.inputs[0].dtype == DType::f32, "QuantizeLinear reads f32, got " + std::string(dtype_name(c.inputs[0].dtype)),
        c.context());
  check_qparams(c, true);
  return {TensorDesc{c.has_input(2) ? c.inputs[2].dtype : DType::u8, c.shape(0)}};
}

std::vector<TensorDesc> infer_dequantize(const InferContext& c) {
  const DType x = c.inputs[0].dtype;
  check(x == DType::u8 || x == DType::i8 || x == DType::i32,
        "DequantizeLinear reads u8, i8 or i32, got " + std::string(dtype_name(x)), c.context());
  check(!c.has_input(2) || c.inputs[2].dtype == x, "DequantizeLinear: the zero point's dtype differs from x's",
        c.context());
  check_qparams(c, false);
  return {TensorDesc{DType::f32, c.shape(0)}};
}

}  // namespace

void register_quantize_schemas() {
  register_schema({"QuantizeLinear", 2, 3, infer_quantize});
  register_schema({"DequantizeLinear", 2, 3, infer_dequantize});
}

}  // namespace tandem::ops
