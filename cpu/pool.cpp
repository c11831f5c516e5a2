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
#include "ops/pool.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;

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
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16, "CPU pooling supports f32 and bf16, got " + x.str());
  ops::PoolParams p = ops::pool_params(op.op_type, op.attributes(), x.shape);
  const ops::Window& w = p.window;
  Shape in(x.shape.begin() + 2, x.shape.end());
  bool include_pad = p.kind == ops::PoolKind::average && p.count_include_pad;
  if (include_pad && hangs_past_pads(w, in)) return make_reference_avg(op, w, in);

  memory::dims strides, kernel, dilation, pad_l, pad_r;
  for (size_t i = 0; i < w.rank(); ++i) {
    strides.push_back(w.strides[i]);
    kernel.push_back(w.kernel[i]);
    dilation.push_back(w.dilations[i] - 1);
    pad_l.push_back(w.pads_begin[i]);
    pad_r.push_back(w.effective_pad_end(i, in[i]));
  }
  using alg = dnnl::algorithm;
  alg a = p.kind == ops::PoolKind::max ? alg::pooling_max
          : include_pad                ? alg::pooling_avg_include_padding
                                       : alg::pooling_avg_exclude_padding;
  TensorDesc y = op.outputs[0];
  y.layout = x.layout;
  memory::desc src = md(x), dst = md(y);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, src, dst, strides, kernel,
                                   dilation, pad_l, pad_r);
  dnnl::pooling_v2_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
  return single_primitive_plan(dnnl::pooling_v2_forward(pd), pd.scratchpad_desc(), src, x.layout, dst,
                               x.layout);
}

}  // namespace

void register_pool_kernels() {
  for (const char* t : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
    register_kernel(t, make_pool);
}

}  // namespace tandem::cpu
