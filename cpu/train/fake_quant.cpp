// Fake quantization for quantization-aware training, plain C++ (oneDNN has
// no training-time fake quantization): the element rule of ops/fake_quant.h,
// per tensor or per channel.
//   x / y / dy / dx: any shape, f32; scale f32 / zero_point i64: [1] or [C];
//   saved: u8 [numel], 1 where in range.
#include <algorithm>
#include <limits>

#include "ops/fake_quant.h"
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

// x viewed as [outer, channels, inner] around `axis` (-1: one channel).
struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelView channel_view(const char* op, const Tensor& x, int64_t axis) {
  ChannelView v;
  if (axis < 0) {
    v.inner = x.numel();
    return v;
  }
  check(axis < x.rank(), "axis " + std::to_string(axis) + " out of range", op_context(op, x));
  for (int64_t i = 0; i < axis; ++i) v.outer *= x.dim(i);
  v.channels = x.dim(axis);
  for (int64_t i = axis + 1; i < x.rank(); ++i) v.inner *= x.dim(i);
  return v;
}

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
  const ChannelView v = channel_view(op, x, p.axis);
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
  const ChannelView v = channel_view(op, x, axis);
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
