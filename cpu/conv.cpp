// Convolution on oneDNN, one setup (DnnlConv: the window, the grouped
// weights, the forward and backward descriptors) for both uses:
// Conv and tandem.FusedConv (imported models) on convolution_forward, and
// training's conv2d forward and backward (below them).
//
// Conv and tandem.FusedConv:
//   X [N, C, D1..Dk] -> Y [N, M, O1..Ok], k = 1..3; W [M, C/group, K1..Kk]
//   must be a constant and is reordered once, at prepare, into the layout the
//   primitive prefers (format_tag::any). 2-D convs produce nChw16c (blocked16)
//   whenever oneDNN has a JIT kernel for it (see choose()), so consecutive
//   convs, pools and eltwise ops exchange blocked tensors without reorders;
//   1-D and 3-D convs use plain layouts.
// FusedConv: Y = act(conv(X) + B + R): the residual R is a binary-add post-op
// in Y's layout (input 3 is requested in that layout), then the activation.
// For 3x3 stride-1 convs big enough to matter, Winograd and direct are both
// built and timed at prepare; the faster is kept. Environment switches:
//   TANDEM_CONV_TUNE=0                 skip timing, use convolution_auto
//   TANDEM_CONV_ALGO=winograd|direct   force an algorithm where it applies
//                                      (winograd that cannot be built is an error)
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "cpu/dnnl_conv.h"
#include "cpu/dnnl_utils.h"
#include "cpu/post_ops.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/conv.h"

namespace tandem::cpu {

using dnnl::memory;

namespace {

using conv_pd = dnnl::convolution_forward::primitive_desc;

// Every 3x3 stride-1 conv is timed, however small its output: on ResNet-50
// at batch 1 (AVX-512, 2 threads) timing also the 7x7-pixel layers took the
// run from 36.8 to 42-45 img/s.
constexpr int kTuneRuns = 5;

struct ConvProblem {
  ops::ConvGeometry g;
  ops::FusedConvExtras extras;
  TensorDesc x, y;
  DnnlConv conv;
  memory::desc weights_md, bias_md;
  // Weights fed at run time (ONNX allows it): read in plain layout each run
  // instead of reordered once.
  bool runtime_weights = false;
  // The residual arrives in Y's own buffer (executor in-place): add it with
  // a sum post-op instead of reading a second tensor.
  bool residual_in_place = false;
};

ConvProblem describe(const OpDesc& op) {
  ConvProblem p;
  p.x = op.inputs[0];
  p.y = op.outputs[0];
  check(p.x.dtype == DType::f32 || p.x.dtype == DType::bf16,
        "CPU Conv supports f32 and bf16, got " + p.x.str());
  p.runtime_weights = op.constants.size() < 2 || op.constants[1] == nullptr;
  p.g = ops::conv_geometry(op.attributes(), p.x.shape, op.inputs[1].shape);
  if (op.op_type == ops::kFusedConvOp) p.extras = ops::fused_conv_extras(op.attributes());
  p.residual_in_place = p.extras.has_residual && op.is_reusable(3);
  p.conv = DnnlConv::of(p.g, op.inputs[1].shape);
  memory::data_type dt = to_dnnl(p.x.dtype);
  p.weights_md = p.conv.weights_md(dt, !p.runtime_weights);
  if (op.has_input(2)) p.bias_md = p.conv.bias_md(dt);
  return p;
}

// `dst` is Y's concrete layout when the residual post-op is included.
// `with_activation` false leaves the activation to run after it (post_ops.h).
conv_pd make_pd(const ConvProblem& p, dnnl::algorithm alg, const memory::desc& src,
                const memory::desc& dst, bool with_residual, bool with_activation = true) {
  dnnl::post_ops po;
  if (with_residual && p.residual_in_place) po.append_sum(1.f);
  else if (with_residual) po.append_binary(dnnl::algorithm::binary_add, dst);
  if (with_activation) append_activation(po, p.extras.activation);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  auto d = p.conv.forward(dnnl::prop_kind::forward_inference, alg, src, p.weights_md, p.bias_md, dst);
  return conv_pd(d, attr, engine());
}

struct ConvChoice {
  conv_pd pd;
  Layout src = Layout::plain, dst = Layout::plain;
  dnnl::algorithm alg = dnnl::algorithm::convolution_auto;
};

// Builds the primitive for `alg` with layouts tandem can name; nullopt when
// oneDNN has no implementation for this algorithm (e.g. Winograd with a
// residual post-op). 2-D: nChw16c output (else plain) from the input as it
// arrives, or nChw16c, or plain (the stem conv's 3 channels want plain): the
// first combination with a non-reference implementation. Not format_tag::any: on AVX-512 it picks nhwc (brgconv),
// which Winograd and the nChw16c pooling/eltwise chain cannot share, so
// consecutive convs would reorder; measured, nChw16c + Winograd for 3x3 is
// ~20% faster over ResNet-50's convs than nhwc.
std::optional<ConvChoice> choose(const ConvProblem& p, dnnl::algorithm alg) {
  bool residual = p.extras.has_residual;
  std::vector<Layout> srcs{Layout::plain}, dsts{Layout::plain};
  if (p.x.shape.size() == 4) {
    srcs = {p.x.layout, Layout::blocked16, Layout::plain};
    dsts = {Layout::blocked16, Layout::plain};
    // A float convolution between integer ones (kept in float by the
    // quantizer) reads and writes their nhwc: reordering its input to
    // nChw16c cost more than the convolution (12 ms for the detector's
    // f32[4,64,256,256] against 6 ms for the depthwise convolution). The
    // stem's 3 channels arrive nhwc in float models too and keep nChw16c.
    if (p.x.layout == Layout::nhwc && p.x.shape[1] > 4) dsts.insert(dsts.begin(), Layout::nhwc);
  }
  std::optional<ConvChoice> fallback;
  for (Layout ld : dsts)
    for (Layout ls : srcs) {
      TensorDesc x = p.x, y = p.y;
      x.layout = ls;
      y.layout = ld;
      try {
        ConvChoice c{make_pd(p, alg, md(x), md(y), residual), ls, ld, alg};
        if (!is_reference(c.pd.impl_info_str())) return c;
        if (!fallback) fallback = c;
      } catch (const dnnl::error&) {
        // no implementation for this combination; try the next
      }
    }
  return fallback;
}

// A primitive with scratch buffers for timing runs at prepare.
struct TimedConv {
  dnnl::convolution_forward prim;
  std::unordered_map<int, memory> args;
  double best = 1e30;  // seconds

  TimedConv(const ConvChoice& c, const OpDesc& op) : prim(c.pd) {
    const conv_pd& pd = c.pd;
    auto zeroed = [](const memory::desc& m) {
      memory mem(m, engine());
      std::memset(mem.get_data_handle(), 0, m.get_size());
      return mem;
    };
    args[DNNL_ARG_SRC] = zeroed(pd.src_desc());
    args[DNNL_ARG_DST] = zeroed(pd.dst_desc());
    args[DNNL_ARG_WEIGHTS] = constant_memory(*op.constants[1], pd.weights_desc());
    if (op.has_input(2)) args[DNNL_ARG_BIAS] = zeroed(pd.bias_desc());
    if (pd.scratchpad_desc().get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = zeroed(pd.scratchpad_desc());
    if (op.op_type == ops::kFusedConvOp && op.inputs.size() > 3 && !op.is_reusable(3))
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = zeroed(pd.dst_desc());
  }
  void run(bool record) {
    auto t0 = std::chrono::steady_clock::now();
    prim.execute(stream(), args);
    stream().wait();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (record) best = std::min(best, s);
  }
};

// True when `a` ran faster than `b`: best of kTuneRuns runs each, the two
// interleaved so that a burst of load from other processes hits both; the
// first run of each only warms caches.
bool faster(const ConvChoice& a, const ConvChoice& b, const OpDesc& op) {
  TimedConv ta(a, op), tb(b, op);
  for (int i = 0; i <= kTuneRuns; ++i) {
    ta.run(i > 0);
    tb.run(i > 0);
  }
  return ta.best < tb.best;
}

bool winograd_shape(const ConvProblem& p) {
  const ops::Window& w = p.g.window;
  return p.x.dtype == DType::f32 && w.rank() == 2 && p.g.group == 1 && w.kernel == Shape{3, 3} &&
         w.strides == Shape{1, 1} && w.dilations == Shape{1, 1};
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

ConvChoice pick_algorithm(const ConvProblem& p, const OpDesc& op) {
  using alg = dnnl::algorithm;
  std::string forced = env("TANDEM_CONV_ALGO");
  if (forced == "winograd" && winograd_shape(p)) {
    auto c = choose(p, alg::convolution_winograd);
    check(c.has_value(), "TANDEM_CONV_ALGO=winograd: oneDNN has no Winograd convolution for " +
                             p.x.str() + " on this CPU");
    return *c;
  }
  if (forced == "direct") {
    if (auto c = choose(p, alg::convolution_direct)) return *c;
  }
  bool tune = env("TANDEM_CONV_TUNE") != "0" && forced.empty() && winograd_shape(p) && !p.runtime_weights;
  if (tune) {
    auto direct = choose(p, alg::convolution_direct);
    auto wino = choose(p, alg::convolution_winograd);
    if (direct && wino) return faster(*wino, *direct, op) ? *wino : *direct;
    if (direct) return *direct;
  }
  auto c = choose(p, alg::convolution_auto);
  check(c.has_value(), "oneDNN has no convolution for " + p.x.str() + " -> " + p.y.str());
  return *c;
}

KernelPlan make_conv(const OpDesc& op) {
  ConvProblem p = describe(op);
  ConvChoice c = pick_algorithm(p, op);
  const bool activation_apart =
      !fused_activation_trusted(c.pd.impl_info_str(), p.extras.activation);
  if (activation_apart)
    c.pd = make_pd(p, c.alg, c.pd.src_desc(), c.pd.dst_desc(), p.extras.has_residual, false);
  const conv_pd& pd = c.pd;
  auto k = std::make_unique<PrimitiveKernel>(dnnl::convolution_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, pd.src_desc());
  if (p.runtime_weights) k->bind_input(DNNL_ARG_WEIGHTS, 1, pd.weights_desc());
  else k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(*op.constants[1], pd.weights_desc()));
  if (op.has_input(2)) {
    if (op.constants[2]) k->bind_constant(DNNL_ARG_BIAS, constant_memory(*op.constants[2], pd.bias_desc()));
    else k->bind_input(DNNL_ARG_BIAS, 2, pd.bias_desc());
  }
  if (p.extras.has_residual && !p.residual_in_place)
    k->bind_input(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, 3, pd.dst_desc());
  k->bind_output(DNNL_ARG_DST, 0, pd.dst_desc());
  if (activation_apart)
    for (dnnl::primitive& a : activation_in_place(pd.dst_desc(), p.extras.activation))
      k->then_in_place(std::move(a), 0);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = c.src;
  if (p.extras.has_residual) plan.input_layouts[3] = c.dst;
  if (p.residual_in_place) plan.inplace_input = 3;
  plan.output_layouts = {c.dst};
  return plan;
}

}  // namespace

void register_conv_kernels() {
  register_kernel("Conv", make_conv);
  register_kernel(ops::kFusedConvOp, make_conv);
}

}  // namespace tandem::cpu

// Conv2d for training: convolution_forward (forward_training),
// convolution_backward_data and convolution_backward_weights (which also
// gives the bias gradient). Tensors stay plain; the primitives run in the
// layouts oneDNN chooses (format_tag::any: nChw16c activations on AVX-512),
// reordered in and out each call as oneDNN's training examples do. Measured
// on AVX-512, one thread, CPU time per batch-128 step (bench_train_step):
// the ResNet BasicBlock stage 97.5 ms blocked against 170 ms on the plain
// tensors in place (gemm-based kernels), the small Fashion-MNIST CNN 67
// against 84 ms (62 against 65 ms with only its 1-channel first conv
// plain), so every conv runs blocked.
//   x [N, C, H, W], w [M, C/G, KH, KW], b [M], y / dy [N, M, OH, OW].
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

// One shape's operands, in the layouts the primitives choose. The forward
// writes y in f32 whatever it computes in; the backward reads dy in the
// compute precision (oneDNN's bf16 backward takes bf16 diff_dst).
struct ConvDescs {
  DnnlConv conv;
  memory::desc src, weights, bias, y, dy;
};

ConvDescs describe(const ops::Conv2dParams& p, const Shape& x, const Shape& w, bool bias) {
  auto act = [](const Shape& s, DType t) { return memory::desc(to_dims(s), to_dnnl(t), memory::format_tag::any); };
  ConvDescs d;
  d.conv = DnnlConv::of(p, w);
  const Shape y = ops::conv2d_output_shape(p, x, w);
  d.src = act(x, p.compute);
  d.weights = d.conv.weights_md(to_dnnl(p.compute), true);
  if (bias) d.bias = d.conv.bias_md(memory::data_type::f32);
  d.y = act(y, DType::f32);
  d.dy = act(y, p.compute);
  return d;
}

struct ForwardEntry {
  ConvDescs d;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

// Built at the first backward only: a forward-only use (evaluation) never
// needs oneDNN to have backward kernels for its dtype.
struct BackwardEntry {
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights weights;
};

std::string key(const char* direction, const ops::Conv2dParams& p, const Tensor& x, const Shape& w, bool bias) {
  return cache_key(direction, x, w, bias, p.groups, p.stride[0], p.stride[1], p.padding[0], p.padding[1],
                   p.dilation[0], p.dilation[1], int(p.compute));
}

const ForwardEntry& forward_entry(Context& c, const ops::Conv2dParams& p, const Tensor& x, const Shape& w,
                                  bool bias) {
  return c.cache.get<ForwardEntry>(key("conv2d_fwd", p, x, w, bias), [&] {
    ConvDescs d = describe(p, x.shape(), w, bias);
    auto desc = d.conv.forward(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.src,
                               d.weights, d.bias, d.y);
    dnnl::convolution_forward::primitive_desc pd(desc, user_scratchpad_attr(), engine());
    return ForwardEntry{d, pd, dnnl::convolution_forward(pd)};
  });
}

const BackwardEntry& backward_entry(Context& c, const ForwardEntry& f, const ops::Conv2dParams& p, const Tensor& x,
                                    const Shape& w, bool bias) {
  return c.cache.get<BackwardEntry>(key("conv2d_bwd", p, x, w, bias), [&] {
    const ConvDescs& d = f.d;
    auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_backward_data::primitive_desc data_pd(
        d.conv.backward_data(alg, d.src, d.weights, d.dy), user_scratchpad_attr(), engine(), f.pd);
    dnnl::convolution_backward_weights::primitive_desc weights_pd(
        d.conv.backward_weights(alg, d.src, d.weights, d.bias, d.dy), user_scratchpad_attr(),
        engine(), f.pd);
    return BackwardEntry{data_pd, dnnl::convolution_backward_data(data_pd), weights_pd,
                         dnnl::convolution_backward_weights(weights_pd)};
  });
}

void check_inputs(const char* op, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b) {
  require_f32(op, {&x, &w, &b});
  check_supported(p.compute == DType::f32 || p.compute == DType::bf16,
                  "conv2d computes in f32 or bf16, not " + std::string(dtype_name(p.compute)), op_context(op, x));
  ops::conv2d_output_shape(p, x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

void forward(const ForwardEntry& f, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  OutputMemory dst(plain_memory(y), f.pd.dst_desc());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, in_layout(plain_memory(x), f.pd.src_desc())},
      {DNNL_ARG_WEIGHTS, in_layout(plain_memory(w, f.d.conv.weights), f.pd.weights_desc())},
      {DNNL_ARG_DST, dst.get()}};
  if (b.defined()) args[DNNL_ARG_BIAS] = in_layout(plain_memory(b), f.pd.bias_desc());
  run_primitive(f.prim, args);
  dst.finish();
}

// `wdims`: the weights as DnnlConv sees them (grouped). `dy` is left in the
// layout the primitive read it in: the other backward primitive mostly wants
// the same, and reuses the reorder.
void backward_data(const BackwardEntry& e, const memory::dims& wdims, const Tensor& w, memory& dy,
                   const GradTarget& dx) {
  OutputMemory diff_src(plain_memory(dx.tensor()), e.data_pd.diff_src_desc());
  memory wm = in_layout(plain_memory(w, wdims), e.data_pd.weights_desc());
  dy = in_layout(dy, e.data_pd.diff_dst_desc());
  run_primitive(
      e.data,
      {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, diff_src.get()}});
  diff_src.finish();
}

void backward_weights(const BackwardEntry& e, const memory::dims& wdims, const Tensor& x, memory& dy,
                      const GradTarget& dw, const GradTarget* db) {
  OutputMemory diff_w(plain_memory(dw.tensor(), wdims), e.weights_pd.diff_weights_desc());
  memory src = in_layout(plain_memory(x), e.weights_pd.src_desc());
  dy = in_layout(dy, e.weights_pd.diff_dst_desc());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, diff_w.get()}};
  if (db) args[DNNL_ARG_DIFF_BIAS] = plain_memory(db->tensor());
  run_primitive(e.weights, args);
  diff_w.finish();
}

}  // namespace

void conv2d_forward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b,
                    const Tensor& y) {
  const char* op = "conv2d_forward";
  check_inputs(op, p, x, w, b);
  require_f32(op, {&y});
  require_shape(op, y, ops::conv2d_output_shape(p, x.shape(), w.shape()), "y");
  guarded(op, x, [&] {
    forward(forward_entry(context(ctx), p, x, w.shape(), b.defined()), x, w, b, y);
    stream().wait();
  });
}

void conv2d_backward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& dy,
                     const GradOut& dx, const GradOut& dw, const GradOut& db) {
  const char* op = "conv2d_backward";
  check_inputs(op, p, x, w, Tensor());
  require_f32(op, {&dy});
  require_shape(op, dy, ops::conv2d_output_shape(p, x.shape(), w.shape()), "dy");
  guarded(op, x, [&] {
    bool bias = db.wanted();
    const ForwardEntry& f = forward_entry(context(ctx), p, x, w.shape(), bias);
    const BackwardEntry& e = backward_entry(context(ctx), f, p, x, w.shape(), bias);
    memory dym = plain_memory(dy);
    if (dx.wanted()) {
      GradTarget t(dx, x.shape(), op);
      backward_data(e, f.d.conv.weights, w, dym, t);
      stream().wait();
      t.commit();
    }
    if (dw.wanted() || bias) {
      GradTarget tw(dw, w.shape(), op), tb(db, {w.dim(0)}, op);
      backward_weights(e, f.d.conv.weights, x, dym, tw, bias ? &tb : nullptr);
      stream().wait();
      tw.commit();
      tb.commit();
    }
  });
}

}  // namespace tandem::cpu::train
