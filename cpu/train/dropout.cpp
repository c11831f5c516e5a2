// Inverted dropout, plain C++ (oneDNN has none): element i is kept when a
// counter-based hash of (seed, i) lands at or above p, so the mask depends on
// nothing else (thread count, device, earlier calls) and a GPU table can draw
// the same one.
//   x / y / dy / dx: any shape; saved: u8 [numel], 1 where kept.
#include <cmath>

#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

uint64_t mix(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void check_p(const char* op, const DropoutParams& p, const Tensor& t) {
  check(p.p >= 0 && p.p < 1, "dropout probability must be in [0, 1), got " + std::to_string(p.p),
        op_context(op, t));
}

}  // namespace

void dropout_forward(void*, const DropoutParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = "dropout_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  check_p(op, p, x);
  int64_t n = x.numel();
  *saved = Tensor::empty(DType::u8, {n});
  // Keep when the top 24 bits, as a fraction, are >= p.
  uint64_t threshold = uint64_t(std::ceil(double(p.p) * double(1 << 24)));
  uint64_t base = mix(p.seed);
  float scale = 1.f / (1.f - p.p);
  const float* xs = x.data<float>();
  float* ys = y.data<float>();
  uint8_t* keep = saved->data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    keep[i] = (mix(base + uint64_t(i + 1) * 0x9e3779b97f4a7c15ULL) >> 40) >= threshold;
    ys[i] = keep[i] ? xs[i] * scale : 0.f;
  }
}

void dropout_backward(void*, const DropoutParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = "dropout_backward";
  require_f32(op, {&dy});
  check_p(op, p, dy);
  check(saved.dtype() == DType::u8 && saved.numel() == dy.numel(), "dropout's backward needs its forward's mask",
        op_context(op, dy));
  if (!dx.wanted()) return;
  GradTarget t(dx, dy.shape(), op);
  int64_t n = dy.numel();
  float scale = 1.f / (1.f - p.p);
  const uint8_t* keep = saved.data<uint8_t>();
  const float* g = dy.data<float>();
  float* out = t.tensor().data<float>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = keep[i] ? g[i] * scale : 0.f;
  t.commit();
}

}  // namespace tandem::cpu::train
