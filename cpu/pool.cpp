// Pooling on oneDNN, one setup (DnnlPool: the algorithm and the window) for
// both uses: the imported ops (below) and training's pool2d forward and
// backward (after them).
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool on oneDNN's
// pooling_v2_forward (dilation support). 4-D tensors stay in the layout they
// arrive in (plain, nhwc, nChw8c, nChw16c) and Y gets the same layout; 3-D and
// 5-D tensors are plain.
// ceil_mode is emulated with extra end padding (Window::effective_pad_end).
// oneDNN's include-padding average would count that extra padding in the
// divisor, so AveragePool with count_include_pad=1 whose last window hangs
// past the explicit pads runs a plain reference loop instead.
#include <algorithm>

#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/pool.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;

// The one oneDNN pooling setup of both uses: the algorithm and the window.
struct DnnlPool {
  ops::PoolKind kind;
  bool count_include_pad;  // average pooling only
  DnnlWindow window;

  dnnl::algorithm algorithm() const {
    if (kind == ops::PoolKind::max) return dnnl::algorithm::pooling_max;
    return count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  dnnl::pooling_v2_forward::desc forward(dnnl::prop_kind prop, const memory::desc& src,
                                         const memory::desc& dst) const {
    const DnnlWindow& w = window;
    return {prop, algorithm(), src, dst, w.strides, w.kernel, w.dilates, w.pad_l, w.pad_r};
  }
  dnnl::pooling_v2_backward::desc backward(const memory::desc& diff_src, const memory::desc& diff_dst) const {
    const DnnlWindow& w = window;
    return {algorithm(), diff_src, diff_dst, w.strides, w.kernel, w.dilates, w.pad_l, w.pad_r};
  }
};

// Spatial geometry padded to 3 dims (leading extents 1) for the reference loop.
struct Geometry3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1};
  int64_t d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

// Average pooling, count_include_pad=1, f32 plain: X [N*C, in...] -> Y [N*C, out...].
// The divisor counts taps inside the explicitly padded input, as ONNX and
// PyTorch define it for ceil_mode.
class AvgPoolIncludePadKernel : public Kernel {
 public:
  AvgPoolIncludePadKernel(int64_t planes, Geometry3 g) : planes_(planes), g_(g) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    int64_t in_size = g_.in[0] * g_.in[1] * g_.in[2];
    int64_t out_size = g_.out[0] * g_.out[1] * g_.out[2];
#pragma omp parallel for
    for (int64_t p = 0; p < planes_; ++p)
      for (int64_t o = 0; o < out_size; ++o)
        y[p * out_size + o] = window_mean(x + p * in_size, o);
  }

 private:
  float window_mean(const float* x, int64_t o) const {
    int64_t od[3] = {o / (g_.out[1] * g_.out[2]), (o / g_.out[2]) % g_.out[1], o % g_.out[2]};
    double sum = 0;
    int64_t count = 0;
    for (int64_t a = 0; a < g_.k[0]; ++a)
      for (int64_t b = 0; b < g_.k[1]; ++b)
        for (int64_t c = 0; c < g_.k[2]; ++c) {
          int64_t tap[3] = {a, b, c}, pos[3];
          bool padded_in = true, inside = true;
          for (int i = 0; i < 3; ++i) {
            pos[i] = od[i] * g_.s[i] - g_.pb[i] + tap[i] * g_.d[i];
            padded_in &= pos[i] < g_.in[i] + g_.pe[i];
            inside &= pos[i] >= 0 && pos[i] < g_.in[i];
          }
          count += padded_in;
          if (inside) sum += x[(pos[0] * g_.in[1] + pos[1]) * g_.in[2] + pos[2]];
        }
    return count ? float(sum / double(count)) : 0.f;
  }
  int64_t planes_;
  Geometry3 g_;
};

bool hangs_past_pads(const ops::Window& w, const Shape& in) {
  for (size_t i = 0; i < w.rank(); ++i)
    if (w.effective_pad_end(i, in[i]) > w.pads_end[i]) return true;
  return false;
}

KernelPlan make_reference_avg(const OpDesc& op, const ops::Window& w, const Shape& in) {
  check_supported(op.inputs[0].dtype == DType::f32, "AveragePool with ceil_mode and count_include_pad needs f32");
  check_supported(w.rank() <= 3, "AveragePool over more than 3 spatial dims");
  Geometry3 g;
  size_t off = 3 - w.rank();
  for (size_t i = 0; i < w.rank(); ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = w.out[i];
    g.k[off + i] = w.kernel[i];
    g.s[off + i] = w.strides[i];
    g.d[off + i] = w.dilations[i];
    g.pb[off + i] = w.pads_begin[i];
    g.pe[off + i] = w.pads_end[i];
  }
  const Shape& x = op.inputs[0].shape;
  KernelPlan plan;
  plan.kernel = std::make_unique<AvgPoolIncludePadKernel>(x[0] * x[1], g);
  plan.input_layouts = {Layout::plain};
  plan.output_layouts = {Layout::plain};
  return plan;
}

KernelPlan make_pool(const OpDesc& op) {
  check_supported(op.outputs.size() == 1, "MaxPool's Indices output is not supported on the CPU backend");
  const TensorDesc& x = op.inputs[0];
  ops::PoolParams p = ops::pool_params(op.op_type, op.attributes(), x.shape);
  // Integers only for max: the maximum of quantized values is the quantized
  // maximum (a QDQ model's quantize moves above it, graph/fuse_qdq.cpp), an
  // average is not.
  const bool int8 = (x.dtype == DType::u8 || x.dtype == DType::i8) && p.kind == ops::PoolKind::max;
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16 || int8,
                  "CPU pooling supports f32 and bf16 (and u8/i8 for max), got " + x.str());
  const ops::Window& w = p.window;
  Shape in(x.shape.begin() + 2, x.shape.end());
  bool include_pad = p.kind == ops::PoolKind::average && p.count_include_pad;
  if (include_pad && hangs_past_pads(w, in)) return make_reference_avg(op, w, in);

  DnnlPool pool{p.kind, p.count_include_pad, dnnl_window(w, in)};
  TensorDesc y = op.outputs[0];
  y.layout = x.layout;
  memory::desc src = md(x), dst = md(y);
  dnnl::pooling_v2_forward::primitive_desc pd(pool.forward(dnnl::prop_kind::forward_inference, src, dst),
                                              user_scratchpad_attr(), engine());
  return single_primitive_plan(dnnl::pooling_v2_forward(pd), pd.scratchpad_desc(), src, x.layout, dst,
                               x.layout);
}

}  // namespace

void register_pool_kernels() {
  for (const char* t : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
    register_kernel(t, make_pool);
}

}  // namespace tandem::cpu

// Max and average pooling for training: pooling_v2_forward
// (forward_training; max keeps its argmax in a workspace) and
// pooling_v2_backward, on plain tensors.
//   x / dx [N, C, H, W], y / dy [N, C, OH, OW];
//   saved: the max-pool workspace as bytes (u8 [size]); none for average.
// Average pooling divides by the full window with count_include_pad (PyTorch's
// default; floor mode, so no window hangs past the padding), else by the taps
// inside the input.
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

struct Entry {
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward bwd;
};

const Entry& entry(Context& c, const ops::Pool2dParams& p, DType dtype, const Shape& x) {
  std::string key = cache_key("pool2d", dtype, x, int(p.kind), p.count_include_pad, p.kernel[0], p.kernel[1],
                              p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1]);
  return c.cache.get<Entry>(key, [&] {
    memory::desc src = plain_md(dtype, to_dims(x)), dst = plain_md(dtype, to_dims(ops::pool2d_output_shape(p, x)));
    DnnlPool pool{p.kind, p.count_include_pad, dnnl_window_2d(p.kernel, p.stride, p.padding, p.dilation)};
    dnnl::pooling_v2_forward::primitive_desc fpd(
        pool.forward(dnnl::prop_kind::forward_training, src, dst), user_scratchpad_attr(),
        engine());
    dnnl::pooling_v2_backward::primitive_desc bpd(pool.backward(src, dst), user_scratchpad_attr(),
                                                  engine(), fpd);
    return Entry{fpd, dnnl::pooling_v2_forward(fpd), dnnl::pooling_v2_backward(bpd)};
  });
}

memory workspace_memory(const Entry& e, const Tensor& saved) {
  return memory(e.fwd_pd.workspace_desc(), engine(), saved.raw());
}

}  // namespace

void pool2d_forward(void* ctx, const ops::Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = p.kind == ops::PoolKind::max ? "max_pool2d_forward" : "avg_pool2d_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, ops::pool2d_output_shape(p, x.shape()), "y");
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), p, x.dtype(), x.shape());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_DST, plain_memory(y)}};
    *saved = Tensor();
    if (p.kind == ops::PoolKind::max) {
      *saved = Tensor::empty(DType::u8, {int64_t(e.fwd_pd.workspace_desc().get_size())});
      args[DNNL_ARG_WORKSPACE] = workspace_memory(e, *saved);
    }
    run_primitive(e.fwd, args);
    stream().wait();
  });
}

void pool2d_backward(void* ctx, const ops::Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = p.kind == ops::PoolKind::max ? "max_pool2d_backward" : "avg_pool2d_backward";
  require_f32(op, {&dy});
  if (!dx.wanted()) return;
  require_f32(op, {&dx.t});
  require_shape(op, dy, ops::pool2d_output_shape(p, dx.t.shape()), "dy");
  guarded(op, dy, [&] {
    const Entry& e = entry(context(ctx), p, dy.dtype(), dx.t.shape());
    GradTarget t(dx, dx.t.shape(), op);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, plain_memory(dy)},
                                         {DNNL_ARG_DIFF_SRC, plain_memory(t.tensor())}};
    if (p.kind == ops::PoolKind::max) {
      check(saved.defined() && saved.bytes() == e.fwd_pd.workspace_desc().get_size(),
            "max pooling's backward needs its forward's workspace", op_context(op, dy));
      args[DNNL_ARG_WORKSPACE] = workspace_memory(e, saved);
    }
    run_primitive(e.bwd, args);
    stream().wait();
    t.commit();
  });
}

}  // namespace tandem::cpu::train
