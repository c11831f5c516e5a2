// QuantizeLinear / DequantizeLinear (ops/quantize.h); training's fake
// quantization follows. Quantizing divides by the scale and rounds half to
// even (nearbyint), as ONNX specifies.
// A per-tensor scale and zero point that are constants (every QDQ model's
// activations) make the op one oneDNN reorder: threaded, vectorized, and
// from whatever layout the producer wrote into the channels-last one the
// integer convolutions read (or back), so no separate layout change runs.
// Otherwise (per-axis, or parameters fed at run time) plain loops on plain
// layouts, the parameters read at run time.
#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/dnnl_utils.h"
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "cpu/typed.h"
#include "ops/fake_quant.h"
#include "ops/quant_channels.h"

namespace tandem::cpu {

namespace {

template <class T>
int64_t zero_point_at(const void* zp, int64_t c) {
  return zp ? int64_t(static_cast<const T*>(zp)[c]) : 0;
}

template <class T>
void quantize(const ops::QuantAxis& q, const float* x, const float* scale, const void* zp, T* y) {
  const int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
#pragma omp parallel for collapse(2) schedule(static) if (q.outer * q.channels * q.inner > (1 << 16))
  for (int64_t o = 0; o < q.outer; ++o)
    for (int64_t c = 0; c < q.channels; ++c) {
      const float s = scale[c];
      const int64_t z = zero_point_at<T>(zp, c);
      const int64_t base = (o * q.channels + c) * q.inner;
      for (int64_t i = base; i < base + q.inner; ++i) {
        const float r = std::nearbyint(x[i] / s);
        // Clamped as a float first: NaN and huge values never reach the cast.
        const float v = std::isnan(r) ? 0.f : std::clamp(r, float(lo - z), float(hi - z));
        y[i] = T(int64_t(v) + z);
      }
    }
}

class QuantizeKernel : public Kernel {
 public:
  QuantizeKernel(ops::QuantAxis q, DType to, bool zero_point) : q_(q), to_(to), zero_point_(zero_point) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const float* x = static_cast<const float*>(in[0]);
    const float* scale = static_cast<const float*>(in[1]);
    const void* zp = zero_point_ ? in[2] : nullptr;
    if (to_ == DType::i8)
      quantize(q_, x, scale, zp, static_cast<int8_t*>(out[0]));
    else
      quantize(q_, x, scale, zp, static_cast<uint8_t*>(out[0]));
  }

 private:
  ops::QuantAxis q_;
  DType to_;
  bool zero_point_;  // the optional input given (else 0, and in[2] absent)
};

class DequantizeKernel : public Kernel {
 public:
  DequantizeKernel(ops::QuantAxis q, DType from, bool zero_point) : q_(q), from_(from), zero_point_(zero_point) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const void* zp = zero_point_ ? in[2] : nullptr;
    visit_dtype(from_, [&](auto t) {
      using T = typename decltype(t)::type;
      if constexpr (std::is_integral_v<T>) {
        const T* x = static_cast<const T*>(in[0]);
        const float* scale = static_cast<const float*>(in[1]);
        float* y = static_cast<float*>(out[0]);
#pragma omp parallel for collapse(2) schedule(static) if (q_.outer * q_.channels * q_.inner > (1 << 16))
        for (int64_t o = 0; o < q_.outer; ++o)
          for (int64_t c = 0; c < q_.channels; ++c) {
            const float s = scale[c];
            const int64_t z = zero_point_at<T>(zp, c);
            const int64_t base = (o * q_.channels + c) * q_.inner;
            for (int64_t i = base; i < base + q_.inner; ++i) y[i] = float(int64_t(x[i]) - z) * s;
          }
      }
    });
  }

 private:
  ops::QuantAxis q_;
  DType from_;
  bool zero_point_;
};

ops::QuantAxis axis_of(const OpDesc& op) {
  return ops::quant_axis(op.attributes(), op.inputs[0].shape, op.inputs[1].shape,
                         op.has_input(2) ? &op.inputs[2].shape : nullptr);
}

// The constant per-tensor scale and zero point, when that is what op has.
struct ConstantQuantization {
  float scale = 1.f;
  int32_t zero_point = 0;
};
std::optional<ConstantQuantization> constant_per_tensor(const OpDesc& op) {
  const Tensor* s = op.constants.size() > 1 ? op.constants[1] : nullptr;
  if (!s || s->numel() != 1 || s->dtype() != DType::f32) return std::nullopt;
  ConstantQuantization q{s->data<float>()[0], 0};
  if (op.has_input(2)) {
    const Tensor* z = op.constants[2];
    if (!z || z->numel() != 1) return std::nullopt;
    q.zero_point = int32_t(z->scalar_at(0));
  }
  return q;
}

// y = saturate(round(x / scale) + zero_point) (quantize) or
// y = (x - zero_point) * scale (dequantize) as a reorder: 4-D integers are
// written (quantize) in channels-last, floats (dequantize) in the layout the
// integers came in.
KernelPlan reorder_plan(const OpDesc& op, const ConstantQuantization& q, bool quantize) {
  const TensorDesc& x = op.inputs[0];
  TensorDesc y = op.outputs[0];
  y.layout = x.shape.size() == 4 ? (quantize ? Layout::nhwc : x.layout) : Layout::plain;
  TensorDesc in = x;
  in.layout = x.shape.size() == 4 ? x.layout : Layout::plain;
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_output_scales(0, {quantize ? 1.f / q.scale : q.scale});
  if (q.zero_point != 0) attr.set_zero_points(quantize ? DNNL_ARG_DST : DNNL_ARG_SRC, 0, {q.zero_point});
  const dnnl::memory::desc src = md(in), dst = md(y);
  dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst, attr);
  return single_primitive_plan(dnnl::reorder(pd), pd.scratchpad_desc(), src, in.layout, dst, y.layout,
                               op.inputs.size(), DNNL_ARG_FROM, DNNL_ARG_TO);
}

KernelPlan make_quantize(const OpDesc& op) {
  const ops::QuantAxis axis = axis_of(op);  // checks the parameters against x
  if (auto q = constant_per_tensor(op)) return reorder_plan(op, *q, true);
  return plain_plan(op, std::make_unique<QuantizeKernel>(axis, op.outputs[0].dtype, op.has_input(2)));
}

KernelPlan make_dequantize(const OpDesc& op) {
  const ops::QuantAxis axis = axis_of(op);
  const DType t = op.inputs[0].dtype;
  if (auto q = constant_per_tensor(op); q && (t == DType::u8 || t == DType::i8)) return reorder_plan(op, *q, false);
  return plain_plan(op, std::make_unique<DequantizeKernel>(axis, t, op.has_input(2)));
}

}  // namespace

void register_quantize_kernels() {
  register_kernel("QuantizeLinear", make_quantize);
  register_kernel("DequantizeLinear", make_dequantize);
}

}  // namespace tandem::cpu

// Fake quantization for quantization-aware training, plain C++ (oneDNN has
// no training-time fake quantization): the element rule of ops/fake_quant.h,
// per tensor or per channel.
//   x / y / dy / dx: any shape, f32; scale f32 / zero_point i64: [1] or [C];
//   saved: u8 [numel], 1 where in range.
namespace tandem::cpu::train {

namespace {

void check_qparams(const char* op, const ops::FakeQuantParams& p, const Tensor& x, const Tensor& scale,
                   const Tensor& zero_point, int64_t channels) {
  check(p.qmin < p.qmax, "empty integer range", op_context(op, x));
  check(scale.dtype() == DType::f32 && scale.numel() == channels,
        "scale must be f32 with " + std::to_string(channels) + " values, got " + scale.desc().str(), op_context(op, x));
  check(zero_point.dtype() == DType::i64 && zero_point.numel() == channels,
        "zero_point must be i64 with " + std::to_string(channels) + " values, got " + zero_point.desc().str(),
        op_context(op, x));
  const float* s = scale.data<float>();
  const int64_t* z = zero_point.data<int64_t>();
  for (int64_t c = 0; c < channels; ++c) {
    check(s[c] > 0 && std::isfinite(s[c]), "scale must be positive and finite", op_context(op, x));
    check(z[c] >= p.qmin && z[c] <= p.qmax, "zero point outside the integer range", op_context(op, x));
  }
}

}  // namespace

void fake_quant_forward(void*, const ops::FakeQuantParams& p, const Tensor& x, const Tensor& scale,
                        const Tensor& zero_point, const Tensor& y, Tensor* saved) {
  const char* op = "fake_quant_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  const ops::QuantChannels v = ops::quant_channels(x.shape(), p.axis, op_context(op, x));
  check_qparams(op, p, x, scale, zero_point, v.channels);
  *saved = Tensor::empty(DType::u8, {x.numel()});
  const float* xs = x.data<float>();
  const float* s = scale.data<float>();
  const int64_t* z = zero_point.data<int64_t>();
  float* ys = y.data<float>();
  uint8_t* mask = saved->data<uint8_t>();
#pragma omp parallel for collapse(2) schedule(static) if (x.numel() > (1 << 16))
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t c = 0; c < v.channels; ++c) {
      const int64_t base = (o * v.channels + c) * v.inner;
      for (int64_t i = base; i < base + v.inner; ++i) {
        const ops::FakeQuantResult r = ops::fake_quant(xs[i], s[c], z[c], p.qmin, p.qmax);
        ys[i] = r.y;
        mask[i] = r.in_range;
      }
    }
}

void fake_quant_backward(void*, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = "fake_quant_backward";
  require_f32(op, {&dy});
  check(saved.dtype() == DType::u8 && saved.numel() == dy.numel(), "fake_quant's backward needs its forward's mask",
        op_context(op, dy));
  if (!dx.wanted()) return;
  GradTarget t(dx, dy.shape(), op);
  const int64_t n = dy.numel();
  const uint8_t* mask = saved.data<uint8_t>();
  const float* g = dy.data<float>();
  float* out = t.tensor().data<float>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = mask[i] ? g[i] : 0.f;
  t.commit();
}

void min_max(void*, const Tensor& x, int64_t axis, const Tensor& min, const Tensor& max) {
  const char* op = "min_max";
  require_f32(op, {&x, &min, &max});
  check(x.numel() > 0, "min/max of an empty tensor", op_context(op, x));
  const ops::QuantChannels v = ops::quant_channels(x.shape(), axis, op_context(op, x));
  require_shape(op, min, {v.channels}, "min");
  require_shape(op, max, {v.channels}, "max");
  const float* xs = x.data<float>();
  float* lo = min.data<float>();
  float* hi = max.data<float>();
#pragma omp parallel for schedule(static) if (v.channels > 1 && x.numel() > (1 << 16))
  for (int64_t c = 0; c < v.channels; ++c) {
    float a = std::numeric_limits<float>::infinity(), b = -a;
    for (int64_t o = 0; o < v.outer; ++o) {
      const float* row = xs + (o * v.channels + c) * v.inner;
      for (int64_t i = 0; i < v.inner; ++i) a = std::min(a, row[i]), b = std::max(b, row[i]);
    }
    lo[c] = a, hi[c] = b;
  }
}

}  // namespace tandem::cpu::train
