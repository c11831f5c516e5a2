#pragma once
// Conv (ONNX opsets 11-17) and tandem.FusedConv.
//   X [N, C, D1..Dk] (k = 1..3), W [M, C/group, K1..Kk] constant, B [M] optional
//   Y [N, M, O1..Ok]
// tandem.FusedConv has the same attributes plus
//   activation / activation_params (see ops/activation.h) and
//   has_residual (int): when 1 the inputs are X, W, B, R with R shaped like Y,
//   and Y = act(conv(X) + B + R). B is always present for the fused op.
#include "core/attributes.h"
#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/spatial.h"

namespace tandem::ops {

struct ConvGeometry {
  int64_t batch = 0;         // N, -1 if unknown
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t group = 1;
  Shape in_spatial;          // [k]
  Window window;             // kernel, strides, dilations, pads, output extents
  Shape output_shape() const;  // [N, M, O1..Ok]
};

// Validates X/W shapes against the attributes (group, kernel_shape, ...).
ConvGeometry conv_geometry(const Attributes& attrs, const Shape& x, const Shape& w);

struct FusedConvExtras {
  FusedActivation activation;
  bool has_residual = false;
};
FusedConvExtras fused_conv_extras(const Attributes& attrs);

inline constexpr const char* kFusedConvOp = "tandem.FusedConv";

}  // namespace tandem::ops
