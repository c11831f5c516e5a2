// Network ops: matrix products, convolutions, pooling, normalizations,
// softmax, quantization (resizing: op_cases_resize.cpp, TopK:
// op_cases_topk.cpp). Matrix
// products, softmax, the normalizations and global pooling have float64
// references here; convolutions, windowed pooling and quantization
// take the CPU backend's f32 result (their float64 versions would repeat the kernels'
// index arithmetic, which the CPU backend's own unit tests check against
// ONNX's conformance data).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/gemm.h"
#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"

namespace tandem::backend_ops {

namespace {

// a [B.., M, K] · b [K, N] or [B.., K, N] (same batch) -> [B.., M, N].
std::vector<Tensor> matmul_ref(const std::vector<Tensor>& in) {
  const Shape& as = in[0].shape();
  const Shape& bs = in[1].shape();
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  int64_t batch = in[0].numel() / (m * k);
  bool b_batched = bs.size() > 2;
  std::vector<double> a = widen(in[0]), b = widen(in[1]), y(size_t(batch * m * n), 0.0);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a[size_t((t * m + i) * k + p)] * b[size_t((b_batched ? t * k * n : 0) + p * n + j)];
        y[size_t((t * m + i) * n + j)] = s;
      }
  Shape ys = as;
  ys.back() = n;
  return {f64_tensor(ys, y)};
}

// Gemm with transB=1: y [M, N] = a [M, K] · b [N, K]ᵀ + c [N], then an
// optional activation (tandem.FusedGemm's).
std::vector<Tensor> gemm_ref(const std::vector<Tensor>& in, double (*act)(double)) {
  int64_t m = in[0].dim(0), k = in[0].dim(1), n = in[1].dim(0);
  std::vector<double> a = widen(in[0]), b = widen(in[1]), c = widen(in[2]), y(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = c[size_t(j)];
      for (int64_t p = 0; p < k; ++p) s += a[size_t(i * k + p)] * b[size_t(j * k + p)];
      y[size_t(i * n + j)] = act ? act(s) : s;
    }
  return {f64_tensor({m, n}, y)};
}

// (Log)Softmax over `axis` (ONNX 13 on: one axis).
std::vector<Tensor> softmax_ref(const std::vector<Tensor>& in, int64_t axis, bool log) {
  const Shape& s = in[0].shape();
  axis = axis < 0 ? axis + int64_t(s.size()) : axis;
  int64_t n = s[size_t(axis)], inner = 1;
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
  int64_t outer = in[0].numel() / (n * inner);
  std::vector<double> x = widen(in[0]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) -> double& { return x[size_t((o * n + k) * inner + j)]; };
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, at(k));
      for (int64_t k = 0; k < n; ++k) sum += std::exp(at(k) - mx);
      for (int64_t k = 0; k < n; ++k)
        at(k) = log ? at(k) - mx - std::log(sum) : std::exp(at(k) - mx) / sum;
    }
  return {f64_tensor(s, x)};
}

// LayerNormalization over the last axis, with scale and bias.
std::vector<Tensor> layernorm_ref(const std::vector<Tensor>& in) {
  int64_t cols = in[0].shape().back(), rows = in[0].numel() / cols;
  std::vector<double> x = widen(in[0]), g = widen(in[1]), b = widen(in[2]);
  for (int64_t r = 0; r < rows; ++r) {
    double* row = x.data() + r * cols;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += row[c] / double(cols);
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean) / double(cols);
    for (int64_t c = 0; c < cols; ++c)
      row[c] = (row[c] - mean) / std::sqrt(var + 1e-5) * g[size_t(c)] + b[size_t(c)];
  }
  return {f64_tensor(in[0].shape(), x)};
}

// Inference BatchNormalization of x [N, C, ...] with scale, bias, mean, var [C].
Reference batchnorm_ref(double epsilon) {
  return [epsilon](const std::vector<Tensor>& in) {
    int64_t n = in[0].dim(0), c = in[0].dim(1), inner = in[0].numel() / (n * c);
    std::vector<double> x = widen(in[0]), g = widen(in[1]), b = widen(in[2]), m = widen(in[3]),
                        v = widen(in[4]);
    for (int64_t i = 0; i < n * c; ++i) {
      size_t ch = size_t(i % c);
      for (int64_t j = 0; j < inner; ++j) {
        double& e = x[size_t(i * inner + j)];
        e = (e - m[ch]) / std::sqrt(v[ch] + epsilon) * g[ch] + b[ch];
      }
    }
    return std::vector<Tensor>{f64_tensor(in[0].shape(), x)};
  };
}

// Global pooling of x [N, C, H, W] -> [N, C, 1, 1].
std::vector<Tensor> global_pool_ref(const std::vector<Tensor>& in, bool max) {
  int64_t nc = in[0].dim(0) * in[0].dim(1), hw = in[0].numel() / nc;
  std::vector<double> x = widen(in[0]), y(static_cast<size_t>(nc));
  for (int64_t i = 0; i < nc; ++i) {
    double acc = max ? -INFINITY : 0;
    for (int64_t j = 0; j < hw; ++j)
      acc = max ? std::max(acc, x[size_t(i * hw + j)]) : acc + x[size_t(i * hw + j)];
    y[size_t(i)] = max ? acc : acc / double(hw);
  }
  return {f64_tensor({in[0].dim(0), in[0].dim(1), 1, 1}, y)};
}

struct ConvShape {
  const char* label;
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

std::vector<ConvShape> conv_shapes() {
  return {{"3x3-pad1", {2, 8, 14, 14}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
          {"1x1", {2, 16, 9, 9}, {24, 16, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
          {"stride2-7x7", {1, 3, 32, 32}, {8, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1},
          {"depthwise", {2, 16, 15, 15}, {16, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16},
          {"grouped", {1, 12, 10, 10}, {12, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4},
          {"dilated-asymmetric", {1, 4, 13, 11}, {6, 4, 3, 3}, {1, 1}, {2, 1, 2, 0}, {2, 2}, 1},
          {"odd-channels", {3, 5, 7, 9}, {7, 5, 3, 1}, {1, 2}, {1, 0, 1, 0}, {1, 1}, 1}};
}

OpCase conv_case(const std::string& op, const ConvShape& s, uint64_t seed) {
  OpCase c(op, s.label);
  c.in(uniform(s.x, seed, -1, 1))
      .constant_in(uniform(s.w, seed + 1, -0.5f, 0.5f))
      .constant_in(uniform({s.w[0]}, seed + 2, -0.5f, 0.5f))
      .attr("kernel_shape", std::vector<int64_t>{s.w[2], s.w[3]})
      .attr("strides", s.strides)
      .attr("pads", s.pads)
      .attr("dilations", s.dilations)
      .attr("group", s.group)
      .channels_last();
  return c;
}

void add_conv_cases(std::vector<OpCase>& cases) {
  Seeds seed{3000};
  for (const ConvShape& s : conv_shapes()) cases.push_back(conv_case("Conv", s, seed.next += 10));
  // tandem.FusedConv's epilogues: activation and parameters, a residual.
  struct Epilogue {
    const char* label;
    const char* act;
    std::vector<float> params;
    bool residual;
  };
  std::vector<Epilogue> epilogues = {{"relu", "Relu", {}, false},
                                     {"relu-residual", "Relu", {}, true},
                                     {"residual", "", {}, true},
                                     {"hardswish", "HardSwish", {0.99976f}, false},
                                     {"hardsigmoid", "HardSigmoid", {0.2f, 0.5f, 0.99976f}, false},
                                     {"silu", "SiLU", {}, false},
                                     {"clip", "Clip", {0.f, 6.f}, false},
                                     {"leakyrelu-residual", "LeakyRelu", {0.1f}, true},
                                     {"sigmoid", "Sigmoid", {}, false},
                                     {"tanh", "Tanh", {}, false}};
  for (const Epilogue& e : epilogues)
    for (const ConvShape& s : {conv_shapes()[0], conv_shapes()[3]}) {
      OpCase c = conv_case(ops::kFusedConvOp, s, seed.next += 10);
      c.label = std::string(s.label) + "-" + e.label;
      c.attr("activation", std::string(e.act)).attr("has_residual", int64_t(e.residual));
      if (!e.params.empty()) c.attr("activation_params", e.params);
      if (e.residual) {
        ops::ConvGeometry g = ops::conv_geometry(c.attrs, s.x, s.w);
        c.in(uniform(g.output_shape(), seed.next + 5));
      }
      cases.push_back(c);
    }
}

void add_matmul_cases(std::vector<OpCase>& cases) {
  Seeds seed{3500};
  cases.push_back(OpCase("MatMul", "2d")
                      .in(uniform({17, 33}, seed()))
                      .in(uniform({33, 9}, seed()))
                      .ref(matmul_ref));
  cases.push_back(OpCase("MatMul", "constant-weight")
                      .in(uniform({8, 64}, seed()))
                      .constant_in(uniform({64, 32}, seed()))
                      .ref(matmul_ref));
  cases.push_back(OpCase("MatMul", "batched-heads")
                      .in(uniform({2, 4, 10, 16}, seed()))
                      .in(uniform({2, 4, 16, 10}, seed()))
                      .ref(matmul_ref));
  cases.push_back(OpCase("MatMul", "3d-shared-weight")
                      .in(uniform({3, 7, 24}, seed()))
                      .constant_in(uniform({24, 12}, seed()))
                      .ref(matmul_ref));
  auto gemm = [&](const std::string& op, const std::string& label, int64_t m, int64_t k,
                  int64_t n) {
    return OpCase(op, label)
        .in(uniform({m, k}, seed()))
        .constant_in(uniform({n, k}, seed(), -0.5f, 0.5f))
        .constant_in(uniform({n}, seed()))
        .attr("transB", int64_t(1));
  };
  cases.push_back(gemm("Gemm", "fc", 4, 256, 100).ref([](const std::vector<Tensor>& in) {
    return gemm_ref(in, nullptr);
  }));
  cases.push_back(gemm("Gemm", "odd", 3, 17, 9).ref([](const std::vector<Tensor>& in) {
    return gemm_ref(in, nullptr);
  }));
  cases.push_back(gemm(ops::kFusedGemmOp, "fc-relu", 4, 64, 48)
                      .attr("activation", std::string("Relu"))
                      .ref([](const std::vector<Tensor>& in) {
                        return gemm_ref(in, [](double x) { return std::max(x, 0.0); });
                      }));
  cases.push_back(gemm(ops::kFusedGemmOp, "fc-sigmoid", 5, 32, 20)
                      .attr("activation", std::string("Sigmoid"))
                      .ref([](const std::vector<Tensor>& in) {
                        return gemm_ref(in, [](double x) { return 1 / (1 + std::exp(-x)); });
                      }));
}

// Gemm's every way of taking C (a constant bias row, full [M, N], [M, 1],
// a scalar, none), transposes, alpha and beta, computed and constant B;
// tandem.FusedGemm's epilogues; MatMul batched, broadcast and folded. The
// CPU backend's result is the reference (its own tests check it against
// ONNX's data).
void add_gemm_variants(std::vector<OpCase>& cases) {
  Seeds seed{3600};
  cases.push_back(OpCase("Gemm", "resnet-head")
                      .in(uniform({1, 2048}, seed(), 0, 4))
                      .constant_in(uniform({1000, 2048}, seed(), -0.05f, 0.05f))
                      .constant_in(uniform({1000}, seed()))
                      .attr("transB", int64_t(1)));
  const int64_t m = 13, k = 70, n = 37;
  struct C {
    std::optional<Shape> c;
    bool c_const, b_const;
    int64_t ta, tb;
    float alpha, beta;
  };
  for (const C& c :
       {C{Shape{n}, true, true, 0, 0, 1.f, 1.f}, C{Shape{1, n}, true, false, 1, 0, 0.5f, 2.f},
        C{Shape{m, n}, false, true, 0, 1, 1.5f, -1.f}, C{Shape{m, n}, true, false, 1, 1, 1.f, 0.5f},
        C{Shape{m, 1}, false, false, 0, 0, 1.f, 3.f}, C{Shape{}, true, true, 0, 1, 2.f, 1.f},
        C{Shape{n}, false, true, 1, 0, 1.f, 1.f}, C{std::nullopt, false, true, 0, 0, 0.25f, 1.f}}) {
    OpCase g("Gemm", "c" + (c.c ? shape_str(*c.c) : std::string("-none")) + "-ta" +
                         std::to_string(c.ta) + "-tb" + std::to_string(c.tb) +
                         (c.c_const ? "-c-constant" : "") + (c.b_const ? "-b-constant" : ""));
    g.in(uniform(c.ta ? Shape{k, m} : Shape{m, k}, seed()));
    Tensor b = uniform(c.tb ? Shape{n, k} : Shape{k, n}, seed());
    c.b_const ? g.constant_in(b) : g.in(b);
    if (c.c) c.c_const ? g.constant_in(uniform(*c.c, seed())) : g.in(uniform(*c.c, seed()));
    cases.push_back(
        g.attr("transA", c.ta).attr("transB", c.tb).attr("alpha", c.alpha).attr("beta", c.beta));
  }
  for (const char* act : {"Relu", "HardSigmoid", "Tanh", "SiLU", "LeakyRelu"})
    cases.push_back(OpCase(ops::kFusedGemmOp, std::string("head-") + act)
                        .in(uniform({8, 256}, seed()))
                        .constant_in(uniform({100, 256}, seed(), -0.2f, 0.2f))
                        .constant_in(uniform({100}, seed()))
                        .attr("transB", int64_t(1))
                        .attr("activation", std::string(act)));
  struct Mm {
    Shape a, b;
    bool b_const;
  };
  for (const Mm& mm : {Mm{{64, 96}, {96, 128}, false}, Mm{{4, 64, 96}, {4, 96, 128}, false},
                       Mm{{4, 33, 20}, {1, 20, 17}, false}, Mm{{1, 33, 20}, {5, 20, 17}, true},
                       Mm{{3, 5, 64, 96}, {96, 128}, true}, Mm{{2, 3, 8, 16}, {2, 3, 16, 8}, false},
                       Mm{{96}, {96, 128}, false}, Mm{{64, 96}, {96}, false}}) {
    OpCase c("MatMul", shape_str(mm.a) + "x" + shape_str(mm.b));
    c.in(uniform(mm.a, seed()));
    mm.b_const ? c.constant_in(uniform(mm.b, seed())) : c.in(uniform(mm.b, seed()));
    cases.push_back(c);
  }
}

Attributes pool_attrs(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
  Attributes a;
  a.set("kernel_shape", k);
  a.set("strides", s);
  a.set("pads", p);
  return a;
}

void add_pool_cases(std::vector<OpCase>& cases) {
  Seeds seed{3700};
  auto pool = [&](const char* op, const char* label, Shape x, Attributes a) {
    OpCase c(op, label);
    c.attrs = std::move(a);
    return c.in(uniform(x, seed())).channels_last();
  };
  cases.push_back(
      pool("MaxPool", "3x3-s2-p1", {2, 16, 28, 28}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1})));
  cases.push_back(
      pool("MaxPool", "2x2-s2", {1, 8, 15, 15}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0})));
  cases.push_back(
      pool("AveragePool", "2x2-s2", {2, 16, 14, 14}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0})));
  cases.push_back(
      pool("AveragePool", "3x3-p1", {1, 16, 15, 15}, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})));
  Attributes include_pad = pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1});
  include_pad.set("count_include_pad", int64_t(1));
  cases.push_back(pool("AveragePool", "3x3-p1-include-pad", {1, 16, 15, 15}, include_pad));
  cases.push_back(OpCase("GlobalAveragePool", "7x7")
                      .in(uniform({2, 64, 7, 7}, seed()))
                      .ref([](const std::vector<Tensor>& in) { return global_pool_ref(in, false); })
                      .channels_last());
  cases.push_back(
      OpCase("GlobalAveragePool", "resnet-features")
          .in(uniform({2, 2048, 7, 7}, seed(), 0, 5))
          .ref([](const std::vector<Tensor>& in) { return global_pool_ref(in, false); }));
  cases.push_back(OpCase("GlobalMaxPool", "odd")
                      .in(uniform({2, 32, 9, 11}, seed()))
                      .ref([](const std::vector<Tensor>& in) { return global_pool_ref(in, true); })
                      .channels_last());
}

void add_norm_cases(std::vector<OpCase>& cases) {
  Seeds seed{3800};
  for (Shape x : {Shape{2, 16, 7, 9}, Shape{4, 10}}) {
    int64_t c = x[1];
    cases.push_back(OpCase("BatchNormalization", x.size() == 4 ? "4d" : "2d")
                        .in(uniform(x, seed()))
                        .constant_in(uniform({c}, seed(), 0.5f, 1.5f))
                        .constant_in(uniform({c}, seed()))
                        .constant_in(uniform({c}, seed()))
                        .constant_in(uniform({c}, seed(), 0.5f, 2.f))
                        .ref(batchnorm_ref(1e-5))
                        .channels_last());
  }
  cases.push_back(OpCase("BatchNormalization", "epsilon-1e-3")
                      .in(uniform({2, 16, 9, 9}, seed()))
                      .constant_in(uniform({16}, seed(), 0.5f, 1.5f))
                      .constant_in(uniform({16}, seed()))
                      .constant_in(uniform({16}, seed(), -0.5f, 0.5f))
                      .constant_in(uniform({16}, seed(), 0.5f, 2.f))
                      .attr("epsilon", 1e-3f)
                      .ref(batchnorm_ref(1e-3))
                      .channels_last());
  for (Shape x : {Shape{2, 49, 96}, Shape{3, 37}}) {
    int64_t c = x.back();
    cases.push_back(OpCase("LayerNormalization", x.size() == 3 ? "tokens" : "odd")
                        .in(uniform(x, seed(), -2, 2))
                        .constant_in(uniform({c}, seed(), 0.5f, 1.5f))
                        .constant_in(uniform({c}, seed()))
                        .ref(layernorm_ref));
  }
  // Rows offset from 0 (the variance must not come from E[x^2] - mean^2):
  // ConvNeXt's 96 channels, ViT's 768 tokens with Mean and InvStdDev, rows
  // longer than a kernel keeps in registers, a broadcast scale.
  struct LayerNorm {
    Shape x;
    int64_t axis;
    Shape scale;
    bool bias;
    int outputs;
  };
  for (const LayerNorm& l :
       {LayerNorm{{2, 56, 56, 96}, -1, {96}, true, 1}, LayerNorm{{2, 197, 768}, -1, {768}, true, 3},
        LayerNorm{{3, 5, 6}, 1, {5, 6}, false, 3}, LayerNorm{{4, 3000}, -1, {3000}, true, 2},
        LayerNorm{{2, 3, 4, 5}, -3, {3, 1, 5}, true, 1}, LayerNorm{{7, 33}, -1, {1}, true, 3}}) {
    OpCase c("LayerNormalization", shape_str(l.x) + "-axis" + std::to_string(l.axis) + "-outputs" +
                                       std::to_string(l.outputs));
    c.in(uniform(l.x, seed(), 3, 7)).constant_in(uniform(l.scale, seed(), 0.5f, 1.5f));
    if (l.bias) c.constant_in(uniform(l.scale, seed()));
    cases.push_back(c.attr("axis", l.axis).attr("epsilon", 1e-5f).outputs(l.outputs));
  }
  for (bool log : {false, true}) {
    const char* op = log ? "LogSoftmax" : "Softmax";
    struct Axis {
      const char* label;
      Shape x;
      int64_t axis;
      float lo, hi;
    };
    // Large logits too: a softmax without the max shift would overflow.
    for (const Axis& a :
         {Axis{"last-axis", {8, 1000}, -1, -5, 5}, Axis{"attention", {2, 4, 10, 10}, -1, -5, 5},
          Axis{"axis1", {3, 7, 5}, 1, -5, 5},
          Axis{"large-logits-last-axis", {8, 1000}, -1, -60, 90},
          Axis{"large-logits-axis1", {2, 5, 7}, 1, -60, 90},
          Axis{"large-logits-long-axis2", {3, 4, 2000}, 2, -60, 90}}) {
      int64_t axis = a.axis;
      cases.push_back(OpCase(op, a.label)
                          .in(uniform(a.x, seed(), a.lo, a.hi))
                          .attr("axis", axis)
                          .ref([axis, log](const std::vector<Tensor>& in) {
                            return softmax_ref(in, axis, log);
                          }));
    }
  }
}

void add_quantize_cases(std::vector<OpCase>& cases) {
  Seeds seed{4000};
  cases.push_back(OpCase("QuantizeLinear", "u8")
                      .in(uniform({2, 3, 4, 5}, seed(), -3, 3))
                      .constant_in(Tensor::from_vector<float>({0.05f}, {}))
                      .constant_in(Tensor::from_vector<uint8_t>({128}, {})));
  cases.push_back(OpCase("DequantizeLinear", "u8")
                      .in(Tensor::from_vector<uint8_t>({0, 1, 127, 128, 129, 200, 255, 17}, {2, 4}))
                      .constant_in(Tensor::from_vector<float>({0.05f}, {}))
                      .constant_in(Tensor::from_vector<uint8_t>({128}, {})));
}


// softmax(scale * Q K^T) V read and written through the op's views.
std::vector<Tensor> attention_ref(const Attributes& a, const std::vector<Tensor>& in) {
  std::vector<int64_t> numel;
  for (const Tensor& t : in) numel.push_back(t.numel());
  const ops::AttentionParams p = ops::attention_params(a, numel);
  const std::vector<double> bias = in.size() > 3 ? widen(in[3]) : std::vector<double>();
  std::vector<double> q = widen(in[0]), k = widen(in[1]), v = widen(in[2]);
  std::vector<double> y(size_t(shape_numel(p.output_shape)));
  auto at = [](const ops::AttentionView& w, int64_t b, int64_t i, int64_t j) {
    return size_t(w.offset + b * w.strides[0] + i * w.strides[1] + j * w.strides[2]);
  };
  std::vector<double> e(size_t(p.n));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.m; ++i) {
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < p.d; ++c) s += q[at(p.q, b, i, c)] * k[at(p.k, b, j, c)];
        if (p.bias_period) s = s * p.scale + bias[size_t(((b % p.bias_period) * p.m + i) * p.n + j)];
        else s *= p.scale;
        top = std::max(top, e[size_t(j)] = s);
      }
      for (double& x : e) sum += (x = std::exp(x - top));
      for (int64_t c = 0; c < p.dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < p.n; ++j) acc += e[size_t(j)] * v[at(p.v, b, j, c)];
        y[at(p.y, b, i, c)] = acc / sum;
      }
    }
  return {f64_tensor(p.output_shape, y)};
}

// tandem.Attention over the views graph/fuse_attention.cpp makes: heads as
// column blocks of [tokens, heads * dim] (PyTorch's [seq, batch, embed]),
// K stored transposed, V at an offset into a shared projection, and a
// query count unlike the key count; Swin's windows with a bias per window
// and head.
void add_attention_cases(std::vector<OpCase>& cases) {
  Seeds seed{3900};
  auto attention = [&](const std::string& label, const ops::AttentionParams& p, const Shape& qs, const Shape& ks,
                       const Shape& vs, int64_t bias_period = 0) {
    OpCase c(ops::kAttentionOp, label);
    ops::set_attention_attributes(c.attrs, p);
    Attributes a = c.attrs;
    c.in(uniform(qs, seed(), -2, 2)).in(uniform(ks, seed(), -2, 2)).in(uniform(vs, seed()));
    if (bias_period) c.constant_in(uniform({bias_period, p.m, p.n}, seed(), -3, 3));
    c.ref([a](const std::vector<Tensor>& in) { return attention_ref(a, in); });
    cases.push_back(c);
  };
  {  // seq 9, batch 2, 3 heads of 16: q, k, v, y all [9, 96]
    ops::AttentionParams p;
    p.batch = 6, p.m = 9, p.n = 9, p.d = 16, p.dv = 16, p.scale = 0.25f;
    p.q.strides = p.k.strides = p.v.strides = p.y.strides = {16, 96, 1};
    p.output_shape = {9, 2, 48};
    attention("heads-as-columns", p, {9, 96}, {9, 96}, {9, 96});
  }
  {  // K^T stored [batch, d, n]; V the second half of [n, batch, 2 * dv]
    ops::AttentionParams p;
    p.batch = 4, p.m = 5, p.n = 11, p.d = 8, p.dv = 24, p.scale = 0.35f;
    p.q.strides = {40, 8, 1};
    p.k.strides = {88, 1, 11};
    p.v.offset = 24;
    p.v.strides = {48, 192, 1};
    p.y.strides = {120, 24, 1};
    p.output_shape = {4, 5, 24};
    attention("k-transposed-v-offset", p, {4, 5, 8}, {4, 8, 11}, {11, 4, 48});
  }
  {  // Swin's windows: 2 images x 4 windows x 3 heads of 49 tokens, a bias
     // per window and head (relative position + shift mask)
    ops::AttentionParams p;
    p.batch = 24, p.m = p.n = 49, p.d = p.dv = 8, p.scale = 0.35f;
    p.q.strides = p.k.strides = p.v.strides = p.y.strides = {392, 8, 1};
    p.output_shape = {8, 3, 49, 8};
    attention("windows-biased", p, {8, 3, 49, 8}, {8, 3, 49, 8}, {8, 3, 49, 8}, 12);
  }
}

}  // namespace

void add_nn_cases(std::vector<OpCase>& cases) {
  add_conv_cases(cases);
  add_matmul_cases(cases);
  add_gemm_variants(cases);
  add_attention_cases(cases);
  add_pool_cases(cases);
  add_norm_cases(cases);
  add_quantize_cases(cases);
  add_qconv_cases(cases);
}

}  // namespace tandem::backend_ops
