// Autocast's precision change on the host: f32, f16 and bf16 in any
// direction, element by element through core/half.h, and the layout change
// between plain and nhwc of a 4-D tensor (portable: the CPU table keeps
// plain f32 activations, so this runs on a split layer's edges and in
// tests, not per conv).
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
          (t.layout() == Layout::plain || (t.layout() == Layout::nhwc && t.rank() == 4)),
      "cast takes f32, f16 or bf16 tensors, plain or 4-D nhwc, got " + t.desc().str(),
      op_context(op, t));
}

// Where destination element i (in dst's byte order) is in src: the same
// place, or the other order of a 4-D [N, C, H, W] tensor.
int64_t source_index(const Tensor& src, const Tensor& dst, int64_t i) {
  if (src.layout() == dst.layout() || ops::layout_free(src.shape())) return i;
  const int64_t c = src.dim(1), h = src.dim(2), w = src.dim(3);
  if (dst.layout() == Layout::nhwc) {  // i walks [N, H, W, C]
    const int64_t ch = i % c, x = i / c % w, y = i / (c * w) % h, n = i / (c * w * h);
    return ((n * c + ch) * h + y) * w + x;
  }
  const int64_t x = i % w, y = i / w % h, ch = i / (w * h) % c,
                n = i / (w * h * c);  // i walks [N, C, H, W]
  return ((n * h + y) * w + x) * c + ch;
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
    float v = load(from, s, source_index(src, dst.t, i));
    store(to, d, i, accumulate ? load(to, d, i) + v : v);
  }
}

}  // namespace tandem::cpu::train
