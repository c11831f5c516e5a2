#pragma once
// tandem.QConv: a convolution on 8-bit integers, the form a QDQ model's
//   DequantizeLinear(x) -> Conv(DequantizeLinear(w), b) [-> Add(r)] [-> act]
//   [-> QuantizeLinear]
// takes once graph/fuse_qdq.cpp has folded its quantize/dequantize pairs.
//   X [N, C, D1..Dk] u8 or i8, with x_scale and x_zero_point
//   W [M, C/group, K1..Kk] i8 constant, symmetric (zero point 0), w_scales
//     one value (per tensor) or M (per output channel)
//   B [M] f32, in real units (added before the activation)
//   R (optional) shaped like Y: f32 in real units (residual = 1), or
//     u8/i8 with r_scale and r_zero_point (residual = 2)
//   Y = act(conv(dq(X), dq(W)) + B + dq(R)), then quantized with y_scale
//     and y_zero_point to y_dtype (u8 or i8), or left in f32 (y_dtype f32)
// Conv's own attributes (strides, pads, dilations, group, kernel_shape,
// auto_pad) and the fused activation (ops/activation.h) as for FusedConv.
#include <vector>

#include "core/attributes.h"
#include "core/dtype.h"
#include "ops/activation.h"

namespace tandem::ops {

inline constexpr const char* kQConvOp = "tandem.QConv";

enum class QResidual : int64_t { none = 0, real = 1, quantized = 2 };

struct QConvParams {
  float x_scale = 1.f;
  int64_t x_zero_point = 0;
  std::vector<float> w_scales;
  DType y_dtype = DType::f32;
  float y_scale = 1.f;
  int64_t y_zero_point = 0;
  QResidual residual = QResidual::none;
  float r_scale = 1.f;
  int64_t r_zero_point = 0;
  Activation activation;
};

// Reads and checks the attributes: positive finite scales, zero points in
// their type's range; Error naming the bad one otherwise.
QConvParams qconv_params(const Attributes& a);

// Writes `p`'s scales, zero points, dtype and residual kind as attributes
// (the inverse of qconv_params; the activation is set as for FusedConv).
void set_qconv_params(Attributes& a, const QConvParams& p);

}  // namespace tandem::ops
