// Equal, Less, Greater, LessOrEqual, GreaterOrEqual (bool output) and Where,
// with numpy broadcasting over plain layouts; Not on bool masks.
#include <cstring>

#include "cpu/broadcast_walk.h"
#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

constexpr int64_t kParallelElems = int64_t(1) << 16;

enum class Cmp { eq, lt, gt, le, ge };

template <class V>
bool compare(Cmp c, V a, V b) {
  switch (c) {
    case Cmp::eq: return a == b;
    case Cmp::lt: return a < b;
    case Cmp::gt: return a > b;
    case Cmp::le: return a <= b;
    case Cmp::ge: return a >= b;
  }
  return false;
}

class CompareKernel : public Kernel {
 public:
  CompareKernel(Cmp cmp, DType t, BroadcastWalk walk) : cmp_(cmp), type_(t), walk_(std::move(walk)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      uint8_t* dst = static_cast<uint8_t*>(out[0]);
      int64_t n = walk_.row_len(), sa = walk_.last_stride(0), sb = walk_.last_stride(1);
#pragma omp parallel for schedule(static) if (walk_.rows() * n >= kParallelElems)
      for (int64_t r = 0; r < walk_.rows(); ++r) {
        int64_t a = walk_.row_base(0, r), b = walk_.row_base(1, r);
        for (int64_t o = 0; o < n; ++o)
          dst[r * n + o] = compare(cmp_, load<T>(in[0], a + o * sa), load<T>(in[1], b + o * sb)) ? 1 : 0;
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
  BroadcastWalk walk(op.outputs[0].shape, {op.inputs[0].shape, op.inputs[1].shape});
  return plain_plan(op, std::make_unique<CompareKernel>(c, op.inputs[0].dtype, std::move(walk)));
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
