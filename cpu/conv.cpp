// Conv and tandem.FusedConv on oneDNN's convolution_forward.
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

#include "cpu/dnnl_utils.h"
#include "cpu/post_ops.h"
#include "cpu/registry.h"
#include "ops/conv.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;
using conv_pd = dnnl::convolution_forward::primitive_desc;

// Every 3x3 stride-1 conv is timed, however small its output: on ResNet-50
// at batch 1 (AVX-512, 2 threads) timing also the 7x7-pixel layers took the
// run from 36.8 to 42-45 img/s.
constexpr int kTuneRuns = 5;

struct ConvProblem {
  ops::ConvGeometry g;
  ops::FusedConvExtras extras;
  TensorDesc x, y;
  memory::desc weights_any, bias_md;
  memory::dims strides, dilates, pad_l, pad_r;
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
  const ops::Window& w = p.g.window;
  for (size_t i = 0; i < w.rank(); ++i) {
    p.strides.push_back(w.strides[i]);
    p.dilates.push_back(w.dilations[i] - 1);  // oneDNN counts skipped elements
    p.pad_l.push_back(w.pads_begin[i]);
    p.pad_r.push_back(w.pads_end[i]);
  }
  // Weights [M, C/G, K...], grouped as [G, M/G, C/G, K...] for oneDNN.
  Shape ws = op.inputs[1].shape;
  memory::dims wd(ws.begin(), ws.end());
  if (p.g.group > 1) {
    wd[0] = ws[0] / p.g.group;
    wd.insert(wd.begin(), p.g.group);
  }
  memory::data_type dt = to_dnnl(p.x.dtype);
  if (p.runtime_weights) {
    // [G, M/G, C/G, K...] row-major is the same memory as [M, C/G, K...].
    memory::dims st(wd.size(), 1);
    for (size_t i = wd.size() - 1; i > 0; --i) st[i - 1] = st[i] * wd[i];
    p.weights_any = memory::desc(wd, dt, st);
  } else {
    p.weights_any = memory::desc(wd, dt, memory::format_tag::any);
  }
  if (op.has_input(2)) p.bias_md = memory::desc({p.g.out_channels}, dt, memory::format_tag::x);
  return p;
}

// `dst` is Y's concrete layout when the residual post-op is included.
conv_pd make_pd(const ConvProblem& p, dnnl::algorithm alg, const memory::desc& src,
                const memory::desc& dst, bool with_residual) {
  dnnl::post_ops po;
  if (with_residual && p.residual_in_place) po.append_sum(1.f);
  else if (with_residual) po.append_binary(dnnl::algorithm::binary_add, dst);
  append_activation(po, p.extras.activation);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  auto prop = dnnl::prop_kind::forward_inference;
  if (p.bias_md) {
    dnnl::convolution_forward::desc d(prop, alg, src, p.weights_any, p.bias_md, dst, p.strides,
                                      p.dilates, p.pad_l, p.pad_r);
    return conv_pd(d, attr, engine());
  }
  dnnl::convolution_forward::desc d(prop, alg, src, p.weights_any, dst, p.strides, p.dilates,
                                    p.pad_l, p.pad_r);
  return conv_pd(d, attr, engine());
}

struct ConvChoice {
  conv_pd pd;
  Layout src = Layout::plain, dst = Layout::plain;
};

// Reference implementations are orders of magnitude slower than the JIT ones.
bool is_reference(const conv_pd& pd) {
  std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) == 0 || impl.find(":ref") != std::string::npos;
}

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
  }
  std::optional<ConvChoice> fallback;
  for (Layout ld : dsts)
    for (Layout ls : srcs) {
      TensorDesc x = p.x, y = p.y;
      x.layout = ls;
      y.layout = ld;
      try {
        ConvChoice c{make_pd(p, alg, md(x), md(y), residual), ls, ld};
        if (!is_reference(c.pd)) return c;
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
