// The training cases, one or more per TrainBackend entry. Inputs keep away
// from the points where a function's derivative jumps (ReLU's 0, max
// pooling's ties), farther than the finite-difference step moves them.
#include "tests/backend_ops/train_cases.h"

#include <algorithm>
#include <cmath>

#include "ops/activation.h"
#include "tests/backend_ops/harness.h"

namespace tandem::backend_ops {

Tensor like_input(const TrainCall& c, size_t i, const Shape& shape) {
  Tensor t = c.t.empty(c.t.ctx, c.in.at(i).dtype(), shape);
  return shape.size() == 4 ? t.with_layout(c.in[i].layout()) : t;
}

namespace {

Tensor f32_on(const TrainCall& c, const Shape& shape) {
  return c.t.empty(c.t.ctx, DType::f32, shape);
}

TrainInput act(Tensor t) { return {std::move(t), true, true}; }
TrainInput param(Tensor t) { return {std::move(t), false, true}; }
TrainInput fixed(Tensor t) { return {std::move(t), false, false}; }

// Shapes whose inputs exceed this are checked against the CPU table only
// (differencing them element by element would take minutes).
constexpr int64_t kMaxDifferenced = 4096;

int64_t numel_of(const std::vector<TrainInput>& inputs) {
  int64_t n = 0;
  for (const TrainInput& in : inputs) n += in.value.defined() ? in.value.numel() : 0;
  return n;
}

std::vector<TrainCase> conv_cases() {
  struct Geometry {
    const char* label;
    Shape x, w;
    int64_t stride, pad, groups;
  };
  std::vector<TrainCase> cases;
  Seeds seed{7000};
  for (Geometry g : {Geometry{"3x3-pad1", {2, 3, 6, 6}, {4, 3, 3, 3}, 1, 1, 1},
                     Geometry{"grouped-stride2", {1, 4, 7, 7}, {4, 2, 3, 3}, 2, 1, 2}}) {
    ops::Conv2dParams p;
    p.stride[0] = p.stride[1] = g.stride;
    p.padding[0] = p.padding[1] = g.pad;
    p.groups = g.groups;
    TrainCase c;
    c.name = std::string("conv2d/") + g.label;
    c.entries = {"conv2d_forward", "conv2d_backward"};
    c.inputs = {act(uniform(g.x, seed())), param(uniform(g.w, seed(), -0.5f, 0.5f)),
                param(uniform({g.w[0]}, seed()))};
    c.cross_device_scale = 100;
    c.forward = [p](TrainCall& k) {
      ops::Conv2dParams q = p;
      q.compute = k.in[0].dtype();
      k.out = {like_input(k, 0, ops::conv2d_output_shape(q, k.in[0].shape(), k.in[1].shape()))};
      k.t.conv2d_forward(k.t.ctx, q, k.in[0], k.in[1], k.in[2], k.out[0]);
    };
    c.backward = [p](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      ops::Conv2dParams q = p;
      q.compute = k.in[0].dtype();
      k.t.conv2d_backward(k.t.ctx, q, k.in[0], k.in[1], dy, g[0], g[1], g[2]);
    };
    cases.push_back(c);
  }
  return cases;
}

// x [N, K] · w [M, K]ᵀ (+ b [M]): small shapes, one without a bias, one
// without dx wanted, and the small CNN's classifier at batch 128 (too large
// to difference: against the CPU table only).
std::vector<TrainCase> linear_cases() {
  struct Linear {
    int64_t n, k, m;
    bool bias, want_dx;
  };
  std::vector<TrainCase> cases;
  Seeds seed{7100};
  for (Linear l :
       {Linear{4, 7, 5, true, true}, Linear{3, 6, 4, false, true}, Linear{1, 9, 3, true, true},
        Linear{5, 3, 17, true, true}, Linear{6, 5, 4, true, false},
        Linear{128, 3136, 128, true, true}, Linear{128, 128, 10, true, true}}) {
    TrainCase c;
    c.name = "linear/" + std::to_string(l.n) + "x" + std::to_string(l.k) + "-to-" +
             std::to_string(l.m) + (l.bias ? "" : "-no-bias") + (l.want_dx ? "" : "-no-dx");
    c.entries = {"linear_forward", "linear_backward"};
    TrainInput x = act(uniform({l.n, l.k}, seed()));
    x.differentiable = l.want_dx;
    c.inputs = {x, param(uniform({l.m, l.k}, seed(), -0.5f, 0.5f)),
                l.bias ? param(uniform({l.m}, seed())) : fixed(Tensor())};
    c.finite_differences = l.n * l.k + l.m * l.k <= 4096;
    c.forward = [](TrainCall& k) {
      k.out = {like_input(k, 0, {k.in[0].dim(0), k.in[1].dim(0)})};
      k.t.linear_forward(k.t.ctx, k.in[0], k.in[1], k.in[2], k.out[0]);
    };
    c.backward = [](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.linear_backward(k.t.ctx, k.in[0], k.in[1], dy, g[0], g[1], g[2]);
    };
    cases.push_back(c);
  }
  return cases;
}

ops::BatchNormParams training_bn(int64_t channels) {
  ops::BatchNormParams p;
  p.training = true;
  p.channels = channels;
  return p;
}

// Training and eval, 4-D and 2-D, a layer of a small CNN (against the CPU
// table only), and only the parameter gradients. The running statistics the
// forward updates in place are outputs too.
std::vector<TrainCase> batch_norm_cases() {
  struct Bn {
    Shape x;
    bool training, want_dx;
  };
  std::vector<TrainCase> cases;
  Seeds seed{7200};
  for (Bn bn :
       {Bn{{4, 3, 3, 3}, true, true}, Bn{{3, 4, 3, 5}, true, true}, Bn{{6, 3, 1, 1}, true, true},
        Bn{{5, 3}, true, true}, Bn{{2, 3, 4, 4}, false, true}, Bn{{4, 3, 5, 5}, true, false},
        Bn{{32, 32, 28, 28}, true, true}, Bn{{32, 64, 14, 14}, false, true}}) {
    int64_t ch = bn.x[1];
    TrainCase c;
    c.name = std::string("batch_norm/") + (bn.training ? "training-" : "eval-") + shape_str(bn.x) +
             (bn.want_dx ? "" : "-parameters-only");
    c.entries = {"batch_norm_forward", "batch_norm_backward"};
    TrainInput x = act(uniform(bn.x, seed(), -2, 3));
    x.differentiable = bn.want_dx;
    c.inputs = {x, param(uniform({ch}, seed(), 0.5f, 1.5f)), param(uniform({ch}, seed())),
                fixed(uniform({ch}, seed(), -0.5f, 0.5f)),
                fixed(uniform({ch}, seed(), 0.5f, 1.5f))};
    c.finite_differences = numel_of(c.inputs) <= kMaxDifferenced;
    ops::BatchNormParams p;
    p.training = bn.training;
    p.channels = ch;
    c.forward = [p](TrainCall& k) {
      k.out = {like_input(k, 0, k.in[0].shape()), k.in[3], k.in[4]};
      k.t.batch_norm_forward(k.t.ctx, p, k.in[0], k.in[1], k.in[2], k.in[3], k.in[4], k.out[0],
                             &k.saved);
    };
    c.backward = [p](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.batch_norm_backward(k.t.ctx, p, k.in[0], k.in[1], k.saved, dy, g[0], g[1], g[2]);
    };
    cases.push_back(c);
  }
  return cases;
}

// LayerNorm over the last axis and LayerNorm2d over the channels of
// [N, C, H, W] (inner > 1: the strided vectors), with and without beta, and
// a ConvNeXt stage's LayerNorm2d (against the CPU table only).
std::vector<TrainCase> layer_norm_cases() {
  struct Ln {
    Shape x;
    int64_t axis, end;
    bool beta;
    float epsilon;
  };
  std::vector<TrainCase> cases;
  Seeds seed{7400};
  for (Ln ln : {Ln{{4, 6, 10}, 2, 3, true, 1e-5f}, Ln{{5, 12}, 1, 2, false, 1e-5f},
                Ln{{2, 8, 3, 3}, 1, 2, true, 1e-6f}, Ln{{3, 5, 2, 4}, 1, 2, false, 1e-6f},
                Ln{{8, 96, 14, 14}, 1, 2, true, 1e-6f}}) {
    const ops::LayerNormParams p = ops::layernorm_params(ln.x, ln.axis, ln.end, ln.epsilon);
    TrainCase c;
    c.name = "layer_norm/" + shape_str(ln.x) + "-axes-" + std::to_string(ln.axis) + "-" +
             std::to_string(ln.end) + (ln.beta ? "" : "-no-beta");
    c.entries = {"layer_norm_forward", "layer_norm_backward"};
    c.inputs = {act(uniform(ln.x, seed(), -2, 3)), param(uniform({p.cols}, seed(), 0.5f, 1.5f)),
                ln.beta ? param(uniform({p.cols}, seed())) : TrainInput{Tensor(), false, false}};
    c.finite_differences = numel_of(c.inputs) <= kMaxDifferenced;
    c.forward = [p](TrainCall& k) {
      k.out = {like_input(k, 0, k.in[0].shape())};
      k.t.layer_norm_forward(k.t.ctx, p, k.in[0], k.in[1], k.in[2], k.out[0], &k.saved);
    };
    c.backward = [p](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.layer_norm_backward(k.t.ctx, p, k.in[0], k.in[1], k.saved, dy, g[0], g[1], g[2]);
    };
    cases.push_back(c);
  }
  return cases;
}

// Training batch norm of x [N, C, H, W] in float64 (batch mean, biased
// variance, epsilon 1e-5), for placing batch_norm_relu's pre-activations.
std::vector<double> batch_norm_host(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  int64_t n = x.dim(0), ch = x.dim(1), hw = x.numel() / (n * ch);
  std::vector<double> v = widen(x), y(v.size());
  for (int64_t c = 0; c < ch; ++c) {
    double mean = 0, var = 0, count = double(n * hw);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) mean += v[size_t((i * ch + c) * hw + j)] / count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j)
        var += std::pow(v[size_t((i * ch + c) * hw + j)] - mean, 2) / count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) {
        size_t e = size_t((i * ch + c) * hw + j);
        y[e] = (v[e] - mean) / std::sqrt(var + 1e-5) * gamma.scalar_at(c) + beta.scalar_at(c);
      }
  }
  return y;
}

TrainCase batch_norm_relu_case() {
  Shape s{4, 3, 3, 3};
  Tensor x = uniform(s, 7300, -2, 2), gamma = uniform({3}, 7301, 0.5f, 1.5f),
         beta = uniform({3}, 7302);
  // z puts every pre-activation batch_norm(x) + z at least 0.3 from ReLU's kink.
  std::vector<double> bn = batch_norm_host(x, gamma, beta);
  Tensor target = away_from(s, 7303, -2, 2, {0.f}, 0.3f), z = Tensor::empty(DType::f32, s);
  for (int64_t i = 0; i < z.numel(); ++i)
    z.data<float>()[i] = float(target.data<float>()[i] - bn[size_t(i)]);
  TrainCase c;
  c.name = "batch_norm_relu/residual";
  c.entries = {"batch_norm_relu_forward", "batch_norm_relu_backward"};
  c.h = 1e-3f;
  c.inputs = {act(x),
              act(z),
              param(gamma),
              param(beta),
              fixed(uniform({3}, 7304)),
              fixed(uniform({3}, 7305, 0.5f, 2))};
  c.forward = [](TrainCall& k) {
    k.out = {like_input(k, 0, k.in[0].shape())};
    k.declined = !k.t.batch_norm_relu_forward(k.t.ctx, training_bn(3), k.in[0], k.in[1], k.in[2],
                                              k.in[3], k.in[4], k.in[5], k.out[0], &k.saved);
  };
  c.backward = [](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
    k.t.batch_norm_relu_backward(k.t.ctx, training_bn(3), k.in[0], k.in[1], k.in[2], k.in[3],
                                 k.out[0], k.saved, dy, g[0], g[1], g[2], g[3]);
  };
  return c;
}

struct ActivationCase {
  const char* label;
  ops::Activation a;
  std::vector<float> kinks;
};

std::vector<TrainCase> eltwise_cases() {
  using K = ops::ActivationKind;
  std::vector<ActivationCase> acts = {
      {"relu", {K::relu}, {0}},
      {"leaky_relu", {K::leaky_relu, 0.1f}, {0}},
      {"clip", {K::clip, -0.5f, 0.75f}, {-0.5f, 0.75f}},
      {"hard_swish", {K::hard_swish, 0, 0, 1}, {-3, 3}},
      {"hard_sigmoid", {K::hard_sigmoid, 0.2f, 0.5f, 1}, {-2.5f, 2.5f}},
      {"sigmoid", {K::sigmoid}, {}},
      {"tanh", {K::tanh}, {}},
      {"silu", {K::silu}, {}},
      {"elu", {K::elu, 1.f}, {0}},
      {"softplus", {K::softplus}, {}},
      {"gelu", {K::gelu}, {}},
      {"gelu_tanh", {K::gelu_tanh}, {}},
  };
  std::vector<TrainCase> cases;
  Seeds seed{7400};
  for (const ActivationCase& ac : acts) {
    TrainCase c;
    c.name = std::string("eltwise/") + ac.label;
    c.entries = {"eltwise_forward", "eltwise_backward"};
    c.inputs = {act(away_from({2, 3, 4, 5}, seed(), -4, 4, ac.kinks, 0.05f))};
    ops::Activation a = ac.a;
    c.forward = [a](TrainCall& k) {
      k.out = {like_input(k, 0, k.in[0].shape())};
      k.t.eltwise_forward(k.t.ctx, a, k.in[0], k.out[0]);
    };
    c.backward = [a](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.eltwise_backward(k.t.ctx, a, k.in[0], dy, g[0]);
    };
    cases.push_back(c);
    // A network's activation size, over a range that crosses every kink and
    // saturates the curved ones: against the CPU table only.
    c.name += "-large";
    c.finite_differences = false;
    c.inputs = {act(uniform({4, 8, 13, 17}, seed(), -8, 8))};
    cases.push_back(c);
  }
  return cases;
}

ops::Pool2dParams pool(ops::PoolKind k, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                       int64_t pw, int64_t dh = 1, int64_t dw = 1, bool include_pad = true) {
  return {k, {kh, kw}, {sh, sw}, {ph, pw}, {dh, dw}, include_pad};
}

// Max with padding, overlap, dilation; average including and excluding the
// padding; global average; a small CNN's 2x2 max pool at its real size
// (too large to difference: checked against the CPU table only).
std::vector<TrainCase> pool_cases() {
  using K = ops::PoolKind;
  struct Pool {
    const char* label;
    Shape x;
    ops::Pool2dParams p;
  };
  std::vector<Pool> pools = {
      {"max-2x2-s2", {2, 3, 6, 6}, pool(K::max, 2, 2, 2, 2, 0, 0)},
      {"max-3x3-s2-p1", {2, 2, 7, 8}, pool(K::max, 3, 3, 2, 2, 1, 1)},
      {"max-3x3-s1", {1, 2, 6, 5}, pool(K::max, 3, 3, 1, 1, 0, 0)},
      {"max-2x2-dilation2", {1, 3, 7, 7}, pool(K::max, 2, 2, 1, 1, 0, 0, 2, 2)},
      {"max-3x2-s2x1-p1x0-d1x2", {2, 2, 7, 7}, pool(K::max, 3, 2, 2, 1, 1, 0, 1, 2)},
      {"average-2x2-s2", {2, 3, 6, 6}, pool(K::average, 2, 2, 2, 2, 0, 0)},
      {"average-3x3-s2-p1-include-pad", {2, 2, 7, 6}, pool(K::average, 3, 3, 2, 2, 1, 1)},
      {"average-3x3-s2-p1-exclude-pad",
       {2, 2, 7, 6},
       pool(K::average, 3, 3, 2, 2, 1, 1, 1, 1, false)},
      {"average-3x2-s1x2-p1", {1, 3, 5, 6}, pool(K::average, 3, 2, 1, 2, 1, 1)},
      {"global-average", {2, 3, 5, 4}, pool(K::average, 5, 4, 1, 1, 0, 0)},
      {"small-cnn-max-2x2-s2", {32, 32, 28, 28}, pool(K::max, 2, 2, 2, 2, 0, 0)},
  };
  std::vector<TrainCase> cases;
  Seeds seed{7500};
  for (const Pool& pl : pools) {
    TrainCase c;
    c.name = std::string("pool2d/") + pl.label;
    c.entries = {"pool2d_forward", "pool2d_backward"};
    c.finite_differences = shape_numel(pl.x) <= 256;
    // Max: distinct values 0.25 apart, so no tie in a window moves under
    // the step (and y is x, unrounded). Average: small values, so the
    // rounding of y weighs little against the step.
    bool spread = c.finite_differences && pl.p.kind == K::max;
    c.inputs = {act(spread ? distinct(pl.x, seed()) : uniform(pl.x, seed()))};
    ops::Pool2dParams p = pl.p;
    c.forward = [p](TrainCall& k) {
      k.out = {like_input(k, 0, ops::pool2d_output_shape(p, k.in[0].shape()))};
      k.t.pool2d_forward(k.t.ctx, p, k.in[0], k.out[0], &k.saved);
    };
    c.backward = [p](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.pool2d_backward(k.t.ctx, p, k.saved, dy, g[0]);
    };
    cases.push_back(c);
  }
  return cases;
}

// y = a + b with either side broadcast; the backward is sum_to into each
// side, so the b shapes are also sum_to's reductions: over few and many
// values per output (the two kernels a device may have).
std::vector<TrainCase> add_cases() {
  std::vector<TrainCase> cases;
  Seeds seed{7600};
  for (auto [sa, sb] : {std::pair<Shape, Shape>{{2, 3, 4, 5}, {2, 3, 4, 5}},
                        {{2, 3, 4, 5}, {1, 3, 1, 1}},
                        {{1, 3, 1, 5}, {2, 3, 4, 5}},
                        {{4, 6}, {1, 6}},
                        {{2, 3, 4, 5}, {2, 1, 4, 1}},
                        {{2, 3, 4, 5}, {1, 1, 1, 1}},
                        {{4, 6}, {4, 1}},
                        {{3, 200}, {3, 1}},
                        {{128, 10}, {1, 10}},
                        {{32, 64, 14, 14}, {1, 64, 1, 1}},
                        {{64, 128, 7, 7}, {1, 128, 1, 1}}}) {
    TrainCase c;
    c.name = "add/" + shape_str(sa) + "+" + shape_str(sb);
    c.entries = {"add_forward", "sum_to"};
    c.inputs = {act(uniform(sa, seed())), act(uniform(sb, seed()))};
    c.finite_differences = numel_of(c.inputs) <= kMaxDifferenced;
    c.forward = [](TrainCall& k) {
      Shape y = ops::add_output_shape(k.in[0].shape(), k.in[1].shape());
      k.out = {like_input(k, k.in[0].shape() == y ? 0 : 1, y)};
      k.t.add_forward(k.t.ctx, k.in[0], k.in[1], k.out[0]);
    };
    c.backward = [](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.sum_to(k.t.ctx, dy, g[0]);
      k.t.sum_to(k.t.ctx, dy, g[1]);
    };
    cases.push_back(c);
  }
  return cases;
}

// Concatenation on several axes, some parts' gradients not wanted; the
// forward only copies, so it must equal the CPU table's exactly.
std::vector<TrainCase> concat_cases() {
  struct Concat {
    std::vector<Shape> parts;
    int64_t axis;
    std::vector<bool> wanted;
  };
  std::vector<TrainCase> cases;
  Seeds seed{7620};
  for (const Concat& cc :
       {Concat{{{2, 2, 3, 3}, {2, 1, 3, 3}, {2, 3, 3, 3}}, 1, {true, true, true}},
        Concat{{{3, 2}, {3, 4}}, -1, {true, false}},
        Concat{{{1, 5, 4}, {2, 5, 4}}, 0, {false, true}},
        Concat{{{16, 32, 14, 14}, {16, 64, 14, 14}}, 1, {true, true}}}) {
    TrainCase c;
    c.name = "concat/axis" + std::to_string(cc.axis);
    c.entries = {"concat_forward", "concat_backward"};
    for (size_t i = 0; i < cc.parts.size(); ++i) {
      c.name += (i ? "+" : "-") + shape_str(cc.parts[i]);
      TrainInput in = act(uniform(cc.parts[i], seed()));
      in.differentiable = cc.wanted[i];
      c.inputs.push_back(in);
    }
    c.exact = true;
    c.finite_differences = numel_of(c.inputs) <= kMaxDifferenced;
    int64_t axis = cc.axis;
    c.forward = [axis](TrainCall& k) {
      k.out = {like_input(k, 0, ops::concat_output_shape(k.in, axis))};
      k.t.concat_forward(k.t.ctx, axis, k.in, k.out[0]);
    };
    c.backward = [axis](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      int64_t a = normalize_axis(axis, k.in[0].rank());
      std::vector<int64_t> extents;
      for (const Tensor& x : k.in) extents.push_back(x.dim(a));
      k.t.concat_backward(k.t.ctx, axis, dy, extents, g);
    };
    cases.push_back(c);
  }
  return cases;
}

std::vector<TrainCase> memory_cases() {
  std::vector<TrainCase> cases;
  TrainCase cast;
  cast.name = "cast/to-f32";
  cast.entries = {"empty", "cast"};
  cast.inputs = {act(uniform({2, 3, 4, 5}, 7700))};
  cast.forward = [](TrainCall& k) {
    k.out = {f32_on(k, k.in[0].shape())};
    k.t.cast(k.t.ctx, k.in[0], GradOut{k.out[0]});
  };
  cast.backward = [](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
    k.t.cast(k.t.ctx, dy, g[0]);
  };
  cases.push_back(cast);

  TrainCase fill;
  fill.name = "fill/0.375";
  fill.entries = {"fill"};
  fill.exact = true;
  fill.inputs = {fixed(uniform({3, 1000}, 7701))};
  fill.forward = [](TrainCall& k) {
    k.out = {f32_on(k, k.in[0].shape())};
    k.t.fill(k.t.ctx, k.out[0], 0.375f);
  };
  cases.push_back(fill);

  TrainCase mm;
  mm.name = "min_max/per-channel";
  mm.entries = {"min_max"};
  mm.inputs = {fixed(uniform({2, 3, 4, 5}, 7702, -3, 3))};
  mm.forward = [](TrainCall& k) {
    k.out = {f32_on(k, {3}), f32_on(k, {3}), f32_on(k, {1}), f32_on(k, {1})};
    k.t.min_max(k.t.ctx, k.in[0], 1, k.out[0], k.out[1]);
    k.t.min_max(k.t.ctx, k.in[0], -1, k.out[2], k.out[3]);
  };
  cases.push_back(mm);
  return cases;
}

std::vector<TrainCase> loss_cases() {
  std::vector<TrainCase> cases;
  for (float smoothing : {0.f, 0.1f}) {
    TrainCase c;
    c.name = smoothing == 0 ? "cross_entropy/plain" : "cross_entropy/label-smoothing";
    c.entries = {"cross_entropy_forward", "cross_entropy_backward"};
    // The loss is one rounded scalar: a longer step weighs its rounding less
    // (the curvature's error, h^2 f''' / 6, stays far below).
    c.h = 5e-2f;
    c.inputs = {act(uniform({5, 7}, 7800, -3, 3)),
                fixed(Tensor::from_vector<int64_t>({0, 6, 3, 3, 1}, {5}))};
    ops::CrossEntropyParams p;
    p.label_smoothing = smoothing;
    c.forward = [p](TrainCall& k) {
      k.out = {f32_on(k, {})};
      k.t.cross_entropy_forward(k.t.ctx, p, k.in[0], k.in[1], k.out[0], &k.saved);
    };
    c.backward = [p](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
      k.t.cross_entropy_backward(k.t.ctx, p, k.saved, k.in[1], dy, g[0]);
    };
    cases.push_back(c);
  }
  TrainCase d;
  d.name = "dropout/p0.3";
  d.entries = {"dropout_forward", "dropout_backward"};
  d.inputs = {act(uniform({2, 3, 4, 5}, 7810))};
  d.plain_only = true;
  ops::DropoutParams dp;
  dp.p = 0.3f;
  dp.seed = 42;
  d.forward = [dp](TrainCall& k) {
    k.out = {like_input(k, 0, k.in[0].shape())};
    k.t.dropout_forward(k.t.ctx, dp, k.in[0], k.out[0], &k.saved);
  };
  d.backward = [dp](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
    k.t.dropout_backward(k.t.ctx, dp, k.saved, dy, g[0]);
  };
  cases.push_back(d);
  return cases;
}

TrainCase fake_quant_case() {
  TrainCase c;
  c.name = "fake_quant/per-tensor";
  c.entries = {"fake_quant_forward", "fake_quant_backward"};
  // Some values past the int8 range at scale 0.02 (|x| > 2.54): clipped.
  c.inputs = {param(uniform({4, 30}, 7900, -3.5f, 3.5f)),
              fixed(Tensor::from_vector<float>({0.02f}, {1})),
              fixed(Tensor::from_vector<int64_t>({3}, {1}))};
  ops::FakeQuantParams p;
  c.forward = [p](TrainCall& k) {
    k.out = {f32_on(k, k.in[0].shape())};
    k.t.fake_quant_forward(k.t.ctx, p, k.in[0], k.in[1], k.in[2], k.out[0], &k.saved);
  };
  c.backward = [](TrainCall& k, const Tensor& dy, std::span<const GradOut> g) {
    k.t.fake_quant_backward(k.t.ctx, k.saved, dy, g[0]);
  };
  // The straight-through estimator: dx = r where x quantizes inside
  // [qmin, qmax], else 0 (ops/fake_quant.h's rule, in float64).
  c.exact_gradient = [p](const std::vector<Tensor>& in, const Tensor& r) {
    double scale = in[1].scalar_at(0), zp = in[2].scalar_at(0);
    std::vector<double> x = widen(in[0]), rv = widen(r), g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      double q = zp + std::nearbyint(float(x[i] * float(1.0f / float(scale))));
      g[i] = q >= double(p.qmin) && q <= double(p.qmax) ? rv[i] : 0;
    }
    return std::vector<Tensor>{f64_tensor(in[0].shape(), g)};
  };
  return c;
}

// x's values snapped to the grid of (scale, zero_point) within [lo, hi]:
// what a fake quantizer hands the next layer.
Tensor on_grid(Tensor x, float scale, int64_t zero_point, int64_t lo, int64_t hi) {
  float* v = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t q =
        std::clamp<int64_t>(zero_point + int64_t(std::nearbyint(v[i] * (1.0f / scale))), lo, hi);
    v[i] = float(q - zero_point) * scale;
  }
  return x;
}

// The integer forward of a quantization-aware conv on values already on
// their grids (x: u8 with a zero point; w: i8, one scale for every channel
// here). A forward-only, optional entry: the tests of train/split's integer
// host side hold it against float64 (tests/train/test_qat_split.cpp).
TrainCase qconv_case() {
  TrainCase c;
  c.name = "qconv2d/3x3-pad1-zero-point";
  c.entries = {"qconv2d_forward"};
  const float x_scale = 0.02f, w_scale = 0.004f;
  c.inputs = {fixed(on_grid(uniform({2, 8, 6, 6}, 7950, -0.1f, 4.9f), x_scale, 5, 0, 255)),
              fixed(on_grid(uniform({16, 8, 3, 3}, 7951, -0.5f, 0.5f), w_scale, 0, -128, 127)),
              fixed(uniform({16}, 7952))};
  c.forward = [=](TrainCall& k) {
    ops::Conv2dParams p;
    p.padding[0] = p.padding[1] = 1;
    ops::QConvParams q;
    q.x_scale = x_scale, q.x_zero_point = 5;
    q.w_scales.assign(16, w_scale);
    k.out = {f32_on(k, {2, 16, 6, 6})};
    k.declined = !k.t.qconv2d_forward(k.t.ctx, p, q, k.in[0], k.in[1], k.in[2], k.out[0]);
  };
  return c;
}

}  // namespace

std::vector<TrainCase> all_train_cases() {
  std::vector<TrainCase> cases = conv_cases();
  cases.push_back(batch_norm_relu_case());
  for (auto* group : {&linear_cases, &batch_norm_cases, &layer_norm_cases, &eltwise_cases,
                      &pool_cases, &add_cases, &concat_cases, &memory_cases, &loss_cases})
    for (TrainCase& c : (*group)()) cases.push_back(std::move(c));
  cases.push_back(fake_quant_case());
  cases.push_back(qconv_case());
  return cases;
}

}  // namespace tandem::backend_ops
