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
  Activation activation;
  bool has_residual = false;
};
FusedConvExtras fused_conv_extras(const Attributes& attrs);

inline constexpr const char* kFusedConvOp = "tandem.FusedConv";

// A 2-D convolution as training describes it (PyTorch's Conv2d arguments).
struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};  // on both sides, as PyTorch's padding=(h, w)
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
  // The multiply's input precision: f32, or f16/bf16 (autocast): x, w and, in
  // the backward, dy are rounded to it, products accumulate in f32. y, dx
  // and dw come out of 16-bit kernels (rounded), as under PyTorch's
  // autocast; y and dx are stored in x's dtype (f32, or the compute dtype
  // itself on a table that keeps 16-bit activations), the bias and dw in f32.
  DType compute = DType::f32;
};

// x [N, C, H, W], w [M, C/groups, KH, KW] -> y [N, M, OH, OW]. Throws Error
// (op and shape in the context) when they do not fit.
Shape conv2d_output_shape(const Conv2dParams& p, const Shape& x, const Shape& w);

}  // namespace tandem::ops
