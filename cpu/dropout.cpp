// Inverted dropout, plain C++ (oneDNN has none). The keep mask is
// ops/dropout.h's function of (seed, element index), shared with the
// CUDA table so both draw the same one.
//   x / y / dy / dx: any shape; saved: u8 [numel], 1 where kept.
#include "ops/dropout.h"
#include "cpu/train_common.h"

namespace tandem::cpu::train {

namespace {

void check_p(const char* op, const ops::DropoutParams& p, const Tensor& t) {
  check(p.p >= 0 && p.p < 1, "dropout probability must be in [0, 1), got " + std::to_string(p.p),
        op_context(op, t));
}

}  // namespace

void dropout_forward(void*, const ops::DropoutParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = "dropout_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  check_p(op, p, x);
  int64_t n = x.numel();
  *saved = Tensor::empty(DType::u8, {n});
  ops::DropoutMask mask = ops::DropoutMask::of(p.p, p.seed);
  float scale = 1.f / (1.f - p.p);
  const float* xs = x.data<float>();
  float* ys = y.data<float>();
  uint8_t* keep = saved->data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    keep[i] = mask.keep(i);
    ys[i] = keep[i] ? xs[i] * scale : 0.f;
  }
}

void dropout_backward(void*, const ops::DropoutParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
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
