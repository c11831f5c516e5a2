// Autocast's precision change on the host: f32, f16 and bf16 in any
// direction, element by element through core/half.h (portable: the CPU table
// keeps f32 activations, so this runs on a split layer's edges and in tests,
// not per conv).
#include "core/half.h"
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

float load(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::f16:
      return f16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

void store(DType t, void* p, int64_t i, float v) {
  switch (t) {
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16(v);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
      break;
  }
}

void require_float(const char* op, const Tensor& t) {
  check(t.device().is_cpu(), "the CPU training kernels got a tensor on " + t.device().str(),
        op_context(op, t));
  check_supported(
      (t.dtype() == DType::f32 || t.dtype() == DType::f16 || t.dtype() == DType::bf16) &&
          t.layout() == Layout::plain,
      "cast takes plain f32, f16 or bf16 tensors, got " + t.desc().str(), op_context(op, t));
}

}  // namespace

void cast(void*, const Tensor& src, const GradOut& dst) {
  const char* op = "cast";
  require_float(op, src);
  if (!dst.wanted()) return;
  require_float(op, dst.t);
  require_shape(op, dst.t, src.shape(), "dst");
  const DType from = src.dtype(), to = dst.t.dtype();
  const bool accumulate = dst.mode == GradMode::accumulate;
  const void* s = src.raw();
  void* d = dst.t.raw();
  const int64_t n = src.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    float v = load(from, s, i);
    store(to, d, i, accumulate ? load(to, d, i) + v : v);
  }
}

}  // namespace tandem::cpu::train
