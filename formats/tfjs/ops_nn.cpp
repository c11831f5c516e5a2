// Convolution, pooling, resizing, matrix products: the layout-sensitive ops.
// They compute in NCHW; NHWC models reach them through Builder::nchw.
#include "formats/tfjs/activation.h"
#include "formats/tfjs/translators.h"

namespace tandem::tfjs {

namespace {

bool is_nchw_format(const TfNode& n) {
  std::string f = n.get_string("data_format", "NHWC");
  check_supported(f == "NHWC" || f == "NCHW", "data_format '" + f + "' is not supported", n.context());
  return f == "NCHW";
}

// Input in the NCHW form the op computes in: for data_format NCHW the TF
// tensor already is NCHW (its native form).
ValueId conv_input(Builder& b, const TfNode& n, const TfValue& x) {
  return is_nchw_format(n) ? b.native(x) : b.nchw(x);
}

TfValue conv_output(const TfNode& n, ValueId y) { return {y, 4, !is_nchw_format(n)}; }

// strides / dilations / ksize: the two spatial entries of a 4-entry list.
std::vector<int64_t> spatial_pair(const TfNode& n, const std::string& key, int64_t fallback) {
  std::vector<int64_t> v = n.get_ints(key);
  if (v.empty()) return {fallback, fallback};
  check(v.size() == 4, "'" + key + "' must have 4 entries", n.context());
  bool nchw = is_nchw_format(n);
  std::vector<int64_t> r = nchw ? std::vector<int64_t>{v[2], v[3]} : std::vector<int64_t>{v[1], v[2]};
  check(r[0] > 0 && r[1] > 0, "'" + key + "' must be positive", n.context());
  check_supported((nchw ? v[0] == 1 && v[1] == 1 : v[0] == 1 && v[3] == 1),
                  "'" + key + "' over batch or channels is not supported", n.context());
  return r;
}

// TF SAME pads the odd pixel at the end: ONNX SAME_UPPER.
void set_padding(const TfNode& n, Attributes& a) {
  std::string p = n.get_string("padding", "VALID");
  if (p == "SAME") {
    a.set("auto_pad", std::string("SAME_UPPER"));
  } else if (p == "VALID") {
    a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  } else if (p == "EXPLICIT") {
    std::vector<int64_t> e = n.get_ints("explicit_paddings");
    check(e.size() == 8, "explicit_paddings must have 8 entries", n.context());
    size_t h = is_nchw_format(n) ? 4 : 2, w = h + 2;
    a.set("pads", std::vector<int64_t>{e[h], e[w], e[h + 1], e[w + 1]});
  } else {
    throw Error::unsupported("padding '" + p + "' is not supported", n.context());
  }
}

Attributes conv_attrs(const TfNode& n, int64_t group) {
  Attributes a;
  a.set("strides", spatial_pair(n, "strides", 1));
  a.set("dilations", spatial_pair(n, "dilations", 1));
  a.set("group", group);
  set_padding(n, a);
  return a;
}

// Fused epilogue of _FusedConv2D / FusedDepthwiseConv2dNative / _FusedMatMul:
// fused_ops = [BiasAdd | FusedBatchNorm] [activation], their tensors as
// extra inputs from index `first_arg`. A bias becomes the op's own bias
// input; BatchNorm and the activation follow it as separate nodes for the
// graph passes to fold.
struct Epilogue {
  ValueId bias = kNoValue;
  std::vector<ValueId> batchnorm;  // scale, offset, mean, variance
  std::string activation;
  ValueId prelu_alpha = kNoValue;
};

Epilogue read_epilogue(Builder& b, const TfNode& n, size_t first_arg, bool nchw_form) {
  Epilogue e;
  std::vector<std::string> ops = n.get_strings("fused_ops");
  size_t arg = first_arg;
  // Bias and BatchNorm parameters are 1-D per channel: the same in either form.
  auto next_arg = [&](bool) { return b.native(b.input(n, arg++)); };
  size_t i = 0;
  if (i < ops.size() && ops[i] == "BiasAdd") {
    e.bias = next_arg(true);
    ++i;
  } else if (i < ops.size() && (ops[i] == "FusedBatchNorm" || ops[i] == "FusedBatchNormV3")) {
    for (int k = 0; k < 4; ++k) e.batchnorm.push_back(next_arg(true));
    ++i;
  }
  if (i < ops.size()) {
    e.activation = ops[i++];
    check_supported(is_activation(e.activation), "unsupported fused op '" + e.activation + "'", n.context());
    if (e.activation == "Prelu") {
      TfValue alpha = b.input(n, arg++);
      e.prelu_alpha = nchw_form && b.constant(alpha) && alpha.rank <= 4 ? b.constant_as_nchw(alpha)
                                                                        : b.native(alpha);
    }
  }
  check_supported(i == ops.size(), "unsupported fused op sequence", n.context());
  return e;
}

ValueId apply_epilogue(Builder& b, const TfNode& n, const Epilogue& e, ValueId y) {
  if (!e.batchnorm.empty()) {
    Attributes a;
    a.set("epsilon", n.get_float("epsilon", 1e-3f));
    y = b.emit1(n, "BatchNormalization", {y, e.batchnorm[0], e.batchnorm[1], e.batchnorm[2], e.batchnorm[3]}, a);
  }
  if (!e.activation.empty())
    y = emit_activation(b, n, e.activation, y, e.prelu_alpha, n.get_float("leakyrelu_alpha", 0.2f));
  return y;
}

// HWIO filter -> OIHW.
ValueId conv_filter(Builder& b, const TfNode& n, const TfValue& f) {
  Attributes a;
  a.set("perm", std::vector<int64_t>{3, 2, 0, 1});
  return b.emit1(n, "Transpose", {b.native(f)}, a);
}

// [H, W, C, M] depthwise filter -> [C*M, 1, H, W] for a grouped conv with C
// groups (output channel c*M + m, as TF orders them).
ValueId depthwise_filter(Builder& b, const TfNode& n, const Tensor& f, int64_t* channels) {
  check(f.rank() == 4, "depthwise filter must be 4-D", n.context());
  *channels = f.dim(2);
  TfValue r{b.add_constant(n.name + "/filter", f.clone().reshaped({f.dim(0), f.dim(1), 1, f.dim(2) * f.dim(3)})), 4, false};
  return conv_filter(b, n, r);
}

void translate_conv(Builder& b, const TfNode& n, bool depthwise, bool fused) {
  TfValue x = b.input(n, 0);
  TfValue f = b.input(n, 1);
  ValueId xin = conv_input(b, n, x);
  int64_t group = 1;
  ValueId w;
  if (depthwise) {
    const Tensor& ft = b.constant_input(n, 1, "depthwise filter");
    w = depthwise_filter(b, n, ft, &group);
  } else {
    w = conv_filter(b, n, f);
  }
  Epilogue e;
  if (fused) e = read_epilogue(b, n, 2, true);
  std::vector<ValueId> ins{xin, w};
  if (e.bias != kNoValue) ins.push_back(e.bias);
  ValueId y = b.emit1(n, "Conv", ins, conv_attrs(n, group));
  b.define(n, conv_output(n, apply_epilogue(b, n, e, y)));
}

void conv2d(Builder& b, const TfNode& n) { translate_conv(b, n, false, false); }
void fused_conv2d(Builder& b, const TfNode& n) { translate_conv(b, n, false, true); }
void depthwise(Builder& b, const TfNode& n) { translate_conv(b, n, true, false); }
void fused_depthwise(Builder& b, const TfNode& n) { translate_conv(b, n, true, true); }

void pool(Builder& b, const TfNode& n, const std::string& op) {
  TfValue x = b.input(n, 0);
  Attributes a;
  a.set("kernel_shape", spatial_pair(n, "ksize", 1));
  a.set("strides", spatial_pair(n, "strides", 1));
  set_padding(n, a);
  if (op == "AveragePool") a.set("count_include_pad", int64_t(0));  // TF averages real pixels only
  b.define(n, conv_output(n, b.emit1(n, op, {conv_input(b, n, x)}, a)));
}

void max_pool(Builder& b, const TfNode& n) { pool(b, n, "MaxPool"); }
void avg_pool(Builder& b, const TfNode& n) { pool(b, n, "AveragePool"); }

// TF resize ops: sizes = [N, C] of x + the requested [height, width].
void resize(Builder& b, const TfNode& n, bool bilinear) {
  TfValue x = b.input(n, 0);
  TfValue size = b.input(n, 1);
  ValueId xin = b.nchw(x);
  ValueId shape = b.emit1(n, "Shape", {xin});
  ValueId nc = b.emit1(n, "Slice", {shape, b.int64_constant(n.name + "/s0", {0}), b.int64_constant(n.name + "/s2", {2})});
  ValueId hw = b.cast(n, b.native(size), DType::i64);
  Attributes cat;
  cat.set("axis", int64_t(0));
  ValueId sizes = b.emit1(n, "Concat", {nc, hw}, cat);
  bool align = n.get_bool("align_corners", false), half = n.get_bool("half_pixel_centers", false);
  check(!(align && half), "align_corners and half_pixel_centers are exclusive", n.context());
  Attributes a;
  a.set("mode", std::string(bilinear ? "linear" : "nearest"));
  if (bilinear) {
    a.set("coordinate_transformation_mode", std::string(align ? "align_corners" : half ? "half_pixel" : "asymmetric"));
  } else {
    a.set("coordinate_transformation_mode",
          std::string(align ? "align_corners" : half ? "tf_half_pixel_for_nn" : "asymmetric"));
    a.set("nearest_mode", std::string(align || half ? "round_prefer_ceil" : "floor"));
  }
  ValueId y = b.emit1(n, "Resize", {xin, kNoValue, kNoValue, sizes}, a);
  b.define(n, TfValue{y, 4, true});
}

void resize_bilinear(Builder& b, const TfNode& n) { resize(b, n, true); }
void resize_nearest(Builder& b, const TfNode& n) { resize(b, n, false); }

void matmul(Builder& b, const TfNode& n, bool fused) {
  TfValue x = b.input(n, 0), w = b.input(n, 1);
  bool ta = n.get_bool("transpose_a", false), tb = n.get_bool("transpose_b", false);
  check_supported(x.rank == 2 && w.rank == 2, "MatMul of rank other than 2", n.context());
  Epilogue e;
  if (fused) e = read_epilogue(b, n, 2, false);
  check_supported(e.batchnorm.empty(), "FusedBatchNorm after MatMul", n.context());
  Attributes a;
  a.set("transA", int64_t(ta));
  a.set("transB", int64_t(tb));
  std::vector<ValueId> ins{b.native(x), b.native(w)};
  if (e.bias != kNoValue) ins.push_back(e.bias);
  ValueId y = b.emit1(n, "Gemm", ins, a);
  b.define(n, TfValue{apply_epilogue(b, n, e, y), 2, false});
}

void mat_mul(Builder& b, const TfNode& n) { matmul(b, n, false); }
void fused_mat_mul(Builder& b, const TfNode& n) { matmul(b, n, true); }

void fused_batch_norm(Builder& b, const TfNode& n) {
  check_supported(!n.get_bool("is_training", false), "FusedBatchNorm in training mode", n.context());
  TfValue x = b.input(n, 0);
  std::vector<ValueId> ins{conv_input(b, n, x)};
  for (size_t i = 1; i <= 4; ++i) ins.push_back(b.native(b.input(n, i)));
  Attributes a;
  a.set("epsilon", n.get_float("epsilon", 1e-3f));
  b.define(n, conv_output(n, b.emit1(n, "BatchNormalization", ins, a)));
}

}  // namespace

void register_nn_translators() {
  register_translator("Conv2D", conv2d);
  register_translator("_FusedConv2D", fused_conv2d);
  register_translator("DepthwiseConv2dNative", depthwise);
  register_translator("FusedDepthwiseConv2dNative", fused_depthwise);
  register_translator("MaxPool", max_pool);
  register_translator("AvgPool", avg_pool);
  register_translator("ResizeBilinear", resize_bilinear);
  register_translator("ResizeNearestNeighbor", resize_nearest);
  register_translator("MatMul", mat_mul);
  register_translator("_FusedMatMul", fused_mat_mul);
  register_translator("FusedBatchNorm", fused_batch_norm);
  register_translator("FusedBatchNormV3", fused_batch_norm);
}

}  // namespace tandem::tfjs
