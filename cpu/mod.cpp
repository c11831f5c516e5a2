// Mod with numpy broadcasting over plain layouts, any numeric dtype (f16 and
// bf16 computed in float). fmod = 1: C's fmod / truncated %, the sign of the
// dividend. fmod = 0: floor modulo, the sign of the divisor, as Python's %
// and numpy's np.mod (also for floats, where ONNX asks for fmod = 1).
// An integer modulo by zero throws Error at run time.
#include <cmath>
#include <type_traits>

#include "cpu/broadcast_walk.h"
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

constexpr int64_t kParallelElems = int64_t(1) << 16;

template <class V>
V truncated_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::fmod(a, b);
  } else {
    if constexpr (std::is_signed_v<V>)
      if (b == V(-1)) return V(0);  // INT_MIN % -1 overflows in C++
    return V(a % b);
  }
}

template <class V>
V floor_mod(V a, V b) {
  V r = truncated_mod(a, b);
  if constexpr (std::is_floating_point_v<V>) {
    if (r == 0) return std::copysign(V(0), b);
  }
  if constexpr (std::is_signed_v<V>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = V(r + b);
  }
  return r;
}

class ModKernel : public Kernel {
 public:
  ModKernel(bool fmod, DType t, BroadcastWalk walk, int64_t divisors, ErrorContext ctx)
      : fmod_(fmod), type_(t), walk_(std::move(walk)), divisors_(divisors), ctx_(std::move(ctx)) {
    visit_dtype(type_, [&](auto tag) {
      using V = num_t<typename decltype(tag)::type>;
      check_supported(!std::is_same_v<V, bool>, "Mod does not support bool", ctx_);
    });
  }

  void run(const void* const* in, void* const* out, const RunContext&) override {
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using V = num_t<T>;
      if constexpr (!std::is_same_v<V, bool>) {
        if constexpr (std::is_integral_v<V>)
          if (walk_.rows() > 0) check_divisors<T>(in[1]);
        if (fmod_) apply<T>(in, out[0], truncated_mod<V>);
        else apply<T>(in, out[0], floor_mod<V>);
      }
    });
  }

 private:
  // Every divisor element is checked before any result is written.
  template <class T>
  void check_divisors(const void* b) const {
    for (int64_t i = 0; i < divisors_; ++i) check(load<T>(b, i) != 0, "integer modulo by zero", ctx_);
  }

  template <class T, class F>
  void apply(const void* const* in, void* dst, F f) const {
    int64_t n = walk_.row_len(), sa = walk_.last_stride(0), sb = walk_.last_stride(1);
#pragma omp parallel for schedule(static) if (walk_.rows() * n >= kParallelElems)
    for (int64_t r = 0; r < walk_.rows(); ++r) {
      int64_t a = walk_.row_base(0, r), b = walk_.row_base(1, r);
      for (int64_t o = 0; o < n; ++o)
        store<T>(dst, r * n + o, f(load<T>(in[0], a + o * sa), load<T>(in[1], b + o * sb)));
    }
  }

  bool fmod_;
  DType type_;
  BroadcastWalk walk_;
  int64_t divisors_;
  ErrorContext ctx_;
};

KernelPlan make_mod(const OpDesc& op) {
  bool fmod = op.attributes().get_int("fmod", 0) != 0;
  BroadcastWalk walk(op.outputs[0].shape, {op.inputs[0].shape, op.inputs[1].shape});
  return plain_plan(op, std::make_unique<ModKernel>(fmod, op.inputs[0].dtype, std::move(walk),
                                                    op.inputs[1].numel(), op.context()));
}

}  // namespace

void register_mod_kernels() { register_kernel("Mod", make_mod); }

}  // namespace tandem::cpu
