// Equal, Less, Greater, LessOrEqual, GreaterOrEqual (bool output) and Where,
// with numpy broadcasting over plain layouts; Not on bool masks. A
// comparison of operands of the output's shape also runs in a non-plain
// layout they share (elementwise_plan).
#include <cstring>
#include <type_traits>

#include "cpu/broadcast_walk.h"
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

constexpr int64_t kParallelElems = int64_t(1) << 16;

enum class Cmp { eq, lt, gt, le, ge };

template <Cmp C, class V>
bool compare(V a, V b) {
  if constexpr (C == Cmp::eq) return a == b;
  if constexpr (C == Cmp::lt) return a < b;
  if constexpr (C == Cmp::gt) return a > b;
  if constexpr (C == Cmp::le) return a <= b;
  return a >= b;
}

// The comparison fixed at compile time and a row of contiguous operands
// taken apart from a strided one: the detector's peak test (Equal over
// f32[N,80,128,128]) then vectorizes, where a switch per element cost
// 1.3 ns an element.
template <Cmp C, class T>
void compare_rows(const BroadcastWalk& walk, const void* a, const void* b, uint8_t* dst) {
  const int64_t n = walk.row_len(), sa = walk.last_stride(0), sb = walk.last_stride(1);
#pragma omp parallel for schedule(static) if (walk.rows() * n >= kParallelElems)
  for (int64_t r = 0; r < walk.rows(); ++r) {
    const int64_t ra = walk.row_base(0, r), rb = walk.row_base(1, r);
    uint8_t* d = dst + r * n;
    if constexpr (std::is_arithmetic_v<T>) {
      if (sa == 1 && sb == 1) {
        const T* pa = static_cast<const T*>(a) + ra;
        const T* pb = static_cast<const T*>(b) + rb;
        for (int64_t o = 0; o < n; ++o) d[o] = compare<C>(pa[o], pb[o]) ? 1 : 0;
        continue;
      }
    }
    for (int64_t o = 0; o < n; ++o)
      d[o] = compare<C>(load<T>(a, ra + o * sa), load<T>(b, rb + o * sb)) ? 1 : 0;
  }
}

class CompareKernel : public Kernel {
 public:
  CompareKernel(Cmp cmp, DType t, BroadcastWalk walk) : cmp_(cmp), type_(t), walk_(std::move(walk)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      uint8_t* dst = static_cast<uint8_t*>(out[0]);
      switch (cmp_) {
        case Cmp::eq:
          return compare_rows<Cmp::eq, T>(walk_, in[0], in[1], dst);
        case Cmp::lt:
          return compare_rows<Cmp::lt, T>(walk_, in[0], in[1], dst);
        case Cmp::gt:
          return compare_rows<Cmp::gt, T>(walk_, in[0], in[1], dst);
        case Cmp::le:
          return compare_rows<Cmp::le, T>(walk_, in[0], in[1], dst);
        case Cmp::ge:
          return compare_rows<Cmp::ge, T>(walk_, in[0], in[1], dst);
      }
    });
  }

 private:
  Cmp cmp_;
  DType type_;
  BroadcastWalk walk_;
};

KernelPlan make_compare(const OpDesc& op) {
  const std::string& t = op.op_type;
  Cmp c = t == "Equal" ? Cmp::eq : t == "Less" ? Cmp::lt : t == "Greater" ? Cmp::gt
        : t == "LessOrEqual" ? Cmp::le : Cmp::ge;
  // Operands of the output's shape are walked as flat memory, the same in
  // any layout they share.
  BroadcastWalk walk(op.outputs[0].shape, {op.inputs[0].shape, op.inputs[1].shape});
  return elementwise_plan(op,
                          std::make_unique<CompareKernel>(c, op.inputs[0].dtype, std::move(walk)));
}

// out = cond ? X : Y, element bytes copied as they are (any dtype).
class WhereKernel : public Kernel {
 public:
  WhereKernel(size_t elem, BroadcastWalk walk) : elem_(int64_t(elem)), walk_(std::move(walk)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const uint8_t* cond = static_cast<const uint8_t*>(in[0]);
    const char* x = static_cast<const char*>(in[1]);
    const char* y = static_cast<const char*>(in[2]);
    char* dst = static_cast<char*>(out[0]);
    int64_t n = walk_.row_len();
    int64_t sc = walk_.last_stride(0), sx = walk_.last_stride(1), sy = walk_.last_stride(2);
#pragma omp parallel for schedule(static) if (walk_.rows() * n >= kParallelElems)
    for (int64_t r = 0; r < walk_.rows(); ++r) {
      int64_t c = walk_.row_base(0, r), ix = walk_.row_base(1, r), iy = walk_.row_base(2, r);
      for (int64_t o = 0; o < n; ++o) {
        const char* src = cond[c + o * sc] ? x + (ix + o * sx) * elem_ : y + (iy + o * sy) * elem_;
        std::memcpy(dst + (r * n + o) * elem_, src, size_t(elem_));
      }
    }
  }

 private:
  int64_t elem_;
  BroadcastWalk walk_;
};

KernelPlan make_where(const OpDesc& op) {
  BroadcastWalk walk(op.outputs[0].shape, {op.inputs[0].shape, op.inputs[1].shape, op.inputs[2].shape});
  return plain_plan(op, std::make_unique<WhereKernel>(dtype_size(op.outputs[0].dtype), std::move(walk)));
}

class NotKernel : public Kernel {
 public:
  explicit NotKernel(int64_t n) : n_(n) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const uint8_t* src = static_cast<const uint8_t*>(in[0]);
    uint8_t* dst = static_cast<uint8_t*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) dst[i] = src[i] ? 0 : 1;
  }

 private:
  int64_t n_;
};

KernelPlan make_not(const OpDesc& op) { return plain_plan(op, std::make_unique<NotKernel>(op.inputs[0].numel())); }

}  // namespace

void register_compare_kernels() {
  register_kernel("Not", make_not);
  for (const char* t : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    register_kernel(t, make_compare);
  register_kernel("Where", make_where);
}

}  // namespace tandem::cpu
