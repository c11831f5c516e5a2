#include "ops/conv.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

Shape ConvGeometry::output_shape() const {
  Shape s{batch, out_channels};
  s.insert(s.end(), window.out.begin(), window.out.end());
  return s;
}

ConvGeometry conv_geometry(const Attributes& a, const Shape& x, const Shape& w) {
  check(x.size() >= 3 && x.size() <= 5, "Conv input must be 3-D to 5-D, got " + shape_str(x));
  check(w.size() == x.size(), "weight " + shape_str(w) + " does not match input rank " + shape_str(x));
  for (size_t i = 0; i < w.size(); ++i) check(w[i] > 0, "weight shape " + shape_str(w) + " has an empty extent");
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[0];
  g.group = a.get_int("group", 1);
  check(g.group >= 1, "group must be positive, got " + std::to_string(g.group));
  check(g.out_channels % g.group == 0, "output channels " + std::to_string(g.out_channels) +
                                           " not divisible by group " + std::to_string(g.group));
  check(g.in_channels < 0 || g.in_channels == w[1] * g.group,
        "input channels " + std::to_string(g.in_channels) + " != weight " + shape_str(w) +
            " channels times group " + std::to_string(g.group));
  Shape kernel(w.begin() + 2, w.end());
  Shape ks = a.get_ints("kernel_shape", kernel);
  check(ks == kernel, "kernel_shape " + shape_str(ks) + " does not match weight " + shape_str(w));
  g.in_spatial.assign(x.begin() + 2, x.end());
  g.window = resolve_window(a, kernel, g.in_spatial, false);
  return g;
}

FusedConvExtras fused_conv_extras(const Attributes& a) {
  FusedConvExtras e;
  e.activation = parse_fused_activation(a);
  int64_t r = a.get_int("has_residual", 0);
  check(r == 0 || r == 1, "has_residual must be 0 or 1");
  e.has_residual = r == 1;
  return e;
}

namespace {

void check_bias(const InferContext& c, const ConvGeometry& g) {
  if (!c.has_input(2)) return;
  const Shape& b = c.shape(2);
  check(b.size() == 1 && b[0] == g.out_channels,
        "bias " + shape_str(b) + " must be [" + std::to_string(g.out_channels) + "]");
  check(c.inputs[2].dtype == c.inputs[0].dtype, "bias dtype differs from input dtype");
}

std::vector<TensorDesc> infer_conv(const InferContext& c) {
  check(c.inputs[1].dtype == c.inputs[0].dtype, "weight dtype differs from input dtype");
  ConvGeometry g = conv_geometry(c.attributes(), c.shape(0), c.shape(1));
  check_bias(c, g);
  TensorDesc y{c.inputs[0].dtype, g.output_shape()};
  if (c.op_type == kFusedConvOp) {
    FusedConvExtras e = fused_conv_extras(c.attributes());
    check(c.has_input(2), "tandem.FusedConv needs its bias input");
    check(int(c.inputs.size()) == (e.has_residual ? 4 : 3),
          "tandem.FusedConv with has_residual=" + std::to_string(e.has_residual) + " takes " +
              std::to_string(e.has_residual ? 4 : 3) + " inputs");
    if (e.has_residual)
      check(c.inputs[3].dtype == y.dtype && c.shape(3) == y.shape,
            "residual " + c.inputs[3].str() + " must match the output " + y.str());
  }
  return {y};
}

}  // namespace

void register_conv_schemas() {
  register_schema({"Conv", 2, 3, infer_conv});
  register_schema({kFusedConvOp, 3, 4, infer_conv});
}

Shape conv2d_output_shape(const Conv2dParams& p, const Shape& x, const Shape& w) {
  TANDEM_CHECK(x.size() == 4 && w.size() == 4,
               "conv2d wants x [N,C,H,W] and w [M,C/groups,KH,KW], w is " + shape_str(w),
               shape_context("conv2d", x));
  int64_t g = p.groups;
  TANDEM_CHECK(g >= 1 && x[1] % g == 0 && w[0] % g == 0 && w[1] * g == x[1],
               "conv2d: channels " + std::to_string(x[1]) + " and weight " + shape_str(w) +
                   " do not match groups=" + std::to_string(g),
               shape_context("conv2d", x));
  const int64_t k[2] = {w[2], w[3]};
  return {x[0], w[0], window_extent_2d("conv2d", x, 0, k, p.stride, p.padding, p.dilation),
          window_extent_2d("conv2d", x, 1, k, p.stride, p.padding, p.dilation)};
}

}  // namespace tandem::ops
