// Cast / CastLike between any two tandem dtypes, elementwise on plain
// layouts (a Cast also on any layout without channel padding,
// elementwise_plan), and training's cast entry (below) on the same element access
// (cpu/typed.h). f16/bf16 convert through float with round-to-nearest-even
// (core/half.h); float -> integer saturates and maps NaN to 0 (ONNX leaves
// these undefined); anything -> bool is `!= 0`.
#include <cstring>
#include <type_traits>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

template <class From, class To>
void cast_range(const void* in, void* out, int64_t begin, int64_t end) {
  if constexpr (std::is_same_v<From, Bool8> && std::is_same_v<To, float>) {
    // A mask to float (the detector's peak test) as one vector loop; the
    // element-wise path below took 1 ns an element.
    const uint8_t* src = static_cast<const uint8_t*>(in);
    float* dst = static_cast<float*>(out);
    for (int64_t i = begin; i < end; ++i) dst[i] = src[i] != 0 ? 1.f : 0.f;
    return;
  }
  for (int64_t i = begin; i < end; ++i) store<To>(out, i, convert_num<num_t<To>>(load<From>(in, i)));
}

class CastKernel : public Kernel {
 public:
  CastKernel(DType from, DType to, int64_t n) : from_(from), to_(to), n_(n) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (from_ == to_) {
      if (n_) std::memcpy(out[0], in[0], size_t(n_) * dtype_size(from_));
      return;
    }
    visit_dtype(from_, [&](auto f) {
      visit_dtype(to_, [&](auto t) {
        using From = typename decltype(f)::type;
        using To = typename decltype(t)::type;
        constexpr int64_t kChunk = 1 << 16;
        int64_t chunks = (n_ + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
        for (int64_t c = 0; c < chunks; ++c)
          cast_range<From, To>(in[0], out[0], c * kChunk, std::min(n_, (c + 1) * kChunk));
      });
    });
  }

 private:
  DType from_, to_;
  int64_t n_;
};

KernelPlan make_cast(const OpDesc& op) {
  auto k = std::make_unique<CastKernel>(op.inputs[0].dtype, op.outputs[0].dtype, op.inputs[0].numel());
  return elementwise_plan(op, std::move(k));
}

}  // namespace

void register_cast_kernels() {
  register_kernel("Cast", make_cast);
  register_kernel("CastLike", make_cast);
}

}  // namespace tandem::cpu

// Autocast's precision change on the host: f32, f16 and bf16 in any
// direction, element by element through core/half.h, and the layout change
// between plain and nhwc of a 4-D tensor (portable: the CPU table keeps
// plain f32 activations, so this runs on a split layer's edges and in
// tests, not per conv).
namespace tandem::cpu::train {

namespace {

// Calls f(Tag<T>{}) with T the storage type of a float dtype (the three the
// training entry takes: a subset of visit_dtype's, so fewer loops compile).
template <class F>
void visit_float(DType t, F&& f) {
  if (t == DType::f16) f(Tag<F16>{});
  else if (t == DType::bf16) f(Tag<BF16>{});
  else f(Tag<float>{});
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
  const bool accumulate = dst.mode == GradMode::accumulate;
  const void* s = src.raw();
  void* d = dst.t.raw();
  const int64_t n = src.numel();
  visit_float(src.dtype(), [&](auto f) {
    visit_float(dst.t.dtype(), [&](auto t) {
      using From = typename decltype(f)::type;
      using To = typename decltype(t)::type;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) {
        float v = load<From>(s, source_index(src, dst.t, i));
        store<To>(d, i, accumulate ? load<To>(d, i) + v : v);
      }
    });
  });
}

}  // namespace tandem::cpu::train
