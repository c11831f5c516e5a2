// TopK along one axis of a plain tensor of any numeric dtype, viewed as
// [outer, n, inner]. Each of the outer * inner slices keeps its best k in a
// heap whose root is the worst kept element, so a slice is read once and most
// elements cost one comparison (O(n log k)); the heap is then sorted, best
// first, whatever `sorted` says. Ties go to the lower index (ONNX); NaN ranks
// above every number, as numpy's sort and torch.topk place it.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/shape_ops.h"
#include "ops/topk.h"

namespace tandem::cpu {

namespace {

constexpr int64_t kParallelElems = int64_t(1) << 16;

// Whether a ranks above b in descending order.
template <class V>
bool above(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

class TopKKernel : public Kernel {
 public:
  TopKKernel(DType t, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest)
      : type_(t), outer_(outer), n_(n), inner_(inner), k_(k), largest_(largest) {}

  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (k_ == 0) return;
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (largest_) select<T, true>(in[0], out[0], out[1]);
      else select<T, false>(in[0], out[0], out[1]);
    });
  }

 private:
  template <class T, bool kLargest>
  void select(const void* x, void* values, void* indices_out) const {
    int64_t* indices = static_cast<int64_t*>(indices_out);
    int64_t slices = outer_ * inner_;
#pragma omp parallel if (slices > 1 && slices * n_ >= kParallelElems)
    {
      std::vector<int64_t> heap;
      heap.reserve(size_t(k_));
#pragma omp for schedule(static)
      for (int64_t s = 0; s < slices; ++s) {
        int64_t o = s / inner_, i = s % inner_, base = o * n_ * inner_ + i;
        auto at = [&](int64_t j) { return load<T>(x, base + j * inner_); };
        auto wins = [](auto a, auto b) { return kLargest ? above(a, b) : above(b, a); };
        // p goes before q in the output.
        auto before = [&](int64_t p, int64_t q) {
          auto a = at(p), b = at(q);
          return wins(a, b) || (!wins(b, a) && p < q);
        };
        heap.clear();
        int64_t j = 0;
        for (; j < std::min(k_, n_); ++j) {
          heap.push_back(j);
          std::push_heap(heap.begin(), heap.end(), before);
        }
        // A later element ties with the worst kept one at best, and loses
        // the tie on its higher index: one comparison rejects it.
        auto worst = at(heap.front());
        auto consider = [&](int64_t q) {
          auto v = at(q);
          if (!wins(v, worst)) return;
          std::pop_heap(heap.begin(), heap.end(), before);
          heap.back() = q;
          std::push_heap(heap.begin(), heap.end(), before);
          worst = at(heap.front());
        };
        if constexpr (std::is_same_v<T, float>) {
          // A contiguous float slice goes by in runs of 64 that one vector
          // test rejects while none could win (above the worst kept, or
          // NaN): the detector's peak map is mostly zeros, and its four
          // slices of 1.3M took 9 ms one element at a time.
          if (inner_ == 1) {
            const float* p = static_cast<const float*>(x) + base;
            constexpr int64_t kRun = 64;
            for (; j + kRun <= n_; j += kRun) {
              bool any = false;
              for (int64_t q = 0; q < kRun; ++q)
                any |= kLargest ? !(p[j + q] <= worst) : !(p[j + q] >= worst);
              if (any)
                for (int64_t q = 0; q < kRun; ++q) consider(j + q);
            }
          }
        }
        for (; j < n_; ++j) consider(j);
        std::sort_heap(heap.begin(), heap.end(), before);
        for (int64_t t = 0; t < k_; ++t) {
          int64_t dst = (o * k_ + t) * inner_ + i;
          indices[dst] = heap[size_t(t)];
          store<T>(values, dst, at(heap[size_t(t)]));
        }
      }
    }
  }

  DType type_;
  int64_t outer_, n_, inner_, k_;
  bool largest_;
};

KernelPlan make_topk(const OpDesc& op) {
  ops::TopKSpec s = ops::topk_spec(ops::infer_context_of(op));
  const Shape& x = op.inputs[0].shape;
  DType t = op.inputs[0].dtype;
  check_supported(t != DType::boolean, "TopK does not support bool");
  size_t axis = size_t(s.axis);
  int64_t outer = shape_numel(Shape(x.begin(), x.begin() + std::ptrdiff_t(axis)));
  int64_t inner = shape_numel(Shape(x.begin() + std::ptrdiff_t(axis) + 1, x.end()));
  int64_t k = op.outputs[0].shape[axis];
  return plain_plan(op, std::make_unique<TopKKernel>(t, outer, x[axis], inner, k, s.largest));
}

}  // namespace

void register_topk_kernels() { register_kernel("TopK", make_topk); }

}  // namespace tandem::cpu
