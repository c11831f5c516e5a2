// Cast / CastLike between any two tandem dtypes, elementwise on plain
// layouts. f16/bf16 convert through float with round-to-nearest-even
// (core/half.h); float -> integer saturates and maps NaN to 0 (ONNX leaves
// these undefined); anything -> bool is `!= 0`.
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

template <class From, class To>
void cast_range(const void* in, void* out, int64_t begin, int64_t end) {
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
  return plain_plan(op, std::move(k));
}

}  // namespace

void register_cast_kernels() {
  register_kernel("Cast", make_cast);
  register_kernel("CastLike", make_cast);
}

}  // namespace tandem::cpu
