// ScatterND on plain layouts: copy data, then write (or combine) one slice of
// prod(data.shape[k:]) elements per index tuple, in index order. Every tuple
// is validated before anything is written; out of range throws.
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

enum class Combine { none, add, mul, max, min };

class ScatterNdKernel : public Kernel {
 public:
  ScatterNdKernel(DType t, Shape data, int64_t tuples, int64_t k, Combine comb, ErrorContext ctx)
      : type_(t), data_(std::move(data)), tuples_(tuples), k_(k), comb_(comb), ctx_(std::move(ctx)) {
    slice_ = shape_numel(Shape(data_.begin() + k_, data_.end()));
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    size_t elem = dtype_size(type_);
    size_t bytes = size_t(shape_numel(data_)) * elem;
    if (bytes && out[0] != in[0]) std::memmove(out[0], in[0], bytes);
    const int64_t* idx = static_cast<const int64_t*>(in[1]);
    for (int64_t t = 0; t < tuples_; ++t) slice_offset(idx + t * k_);  // validate all first
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t dst = slice_offset(idx + t * k_), src = t * slice_;
      if (comb_ == Combine::none) {
        std::memcpy(static_cast<char*>(out[0]) + dst * int64_t(elem),
                    static_cast<const char*>(in[2]) + src * int64_t(elem), size_t(slice_) * elem);
      } else {
        combine(in[2], src, out[0], dst);
      }
    }
  }

 private:
  // Element offset of the slice an index tuple addresses (negative counts from the end).
  int64_t slice_offset(const int64_t* tuple) const {
    int64_t off = 0;
    for (int64_t d = 0; d < k_; ++d) {
      int64_t n = data_[size_t(d)], v = tuple[d];
      check(v >= -n && v < n, "index " + std::to_string(v) + " out of range for extent " + std::to_string(n), ctx_);
      off = off * n + (v < 0 ? v + n : v);
    }
    return off * slice_;
  }
  void combine(const void* upd, int64_t src, void* out, int64_t dst) const {
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using V = num_t<T>;
      if constexpr (!std::is_same_v<V, bool>) {
        for (int64_t i = 0; i < slice_; ++i) {
          V a = load<T>(out, dst + i), b = load<T>(upd, src + i);
          V r = comb_ == Combine::add ? V(a + b) : comb_ == Combine::mul ? V(a * b)
              : comb_ == Combine::max ? (b > a ? b : a) : (b < a ? b : a);
          store<T>(out, dst + i, r);
        }
      }
    });
  }

  DType type_;
  Shape data_;
  int64_t tuples_, k_, slice_ = 1;
  Combine comb_;
  ErrorContext ctx_;
};

KernelPlan make_scatter_nd(const OpDesc& op) {
  const Shape& idx = op.inputs[1].shape;
  std::string r = op.attributes().get_string("reduction", "none");
  Combine c = r == "add" ? Combine::add : r == "mul" ? Combine::mul : r == "max" ? Combine::max
            : r == "min" ? Combine::min : Combine::none;
  int64_t k = idx.back();
  int64_t tuples = k == 0 ? 0 : shape_numel(idx) / k;
  auto kernel = std::make_unique<ScatterNdKernel>(op.inputs[0].dtype, op.inputs[0].shape, tuples, k, c, op.context());
  return plain_plan(op, std::move(kernel));
}

}  // namespace

void register_scatter_kernels() { register_kernel("ScatterND", make_scatter_nd); }

}  // namespace tandem::cpu
