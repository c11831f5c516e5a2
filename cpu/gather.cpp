// Gather along one axis. Data viewed as [outer, extent, inner]; indices
// (int32/int64, any shape, negative counts from the end) are checked at run
// time, before any is used, and an out-of-range index throws.
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

class GatherKernel : public Kernel {
 public:
  GatherKernel(int64_t outer, int64_t extent, int64_t inner_bytes, int64_t count, DType index_type,
               ErrorContext ctx)
      : outer_(outer), extent_(extent), inner_(inner_bytes), count_(count),
        index_type_(index_type), ctx_(std::move(ctx)) {}

  void run(const void* const* in, void* const* out, const RunContext&) override {
    check_indices(in[1]);
    const char* src = static_cast<const char*>(in[0]);
    char* dst = static_cast<char*>(out[0]);
    int64_t total = outer_ * count_;
#pragma omp parallel for schedule(static) if (total * inner_ >= (int64_t(1) << 18))
    for (int64_t r = 0; r < total; ++r) {
      int64_t o = r / count_, j = index_at(in[1], r % count_);
      if (j < 0) j += extent_;
      std::memcpy(dst + r * inner_, src + (o * extent_ + j) * inner_, size_t(inner_));
    }
  }

 private:
  int64_t index_at(const void* p, int64_t j) const {
    return index_type_ == DType::i64 ? static_cast<const int64_t*>(p)[j] : static_cast<const int32_t*>(p)[j];
  }
  // All indices are validated before the copy reads any of them.
  void check_indices(const void* p) const {
    for (int64_t j = 0; j < count_; ++j) {
      int64_t v = index_at(p, j);
      check(v >= -extent_ && v < extent_,
            "index " + std::to_string(v) + " out of range for axis extent " + std::to_string(extent_), ctx_);
    }
  }

  int64_t outer_, extent_, inner_, count_;
  DType index_type_;
  ErrorContext ctx_;
};

KernelPlan make_gather(const OpDesc& op) {
  const Shape& data = op.inputs[0].shape;
  size_t axis = size_t(normalize_axis(op.attributes().get_int("axis", 0), int64_t(data.size())));
  int64_t outer = shape_numel(Shape(data.begin(), data.begin() + std::ptrdiff_t(axis)));
  int64_t inner = shape_numel(Shape(data.begin() + std::ptrdiff_t(axis) + 1, data.end()));
  auto k = std::make_unique<GatherKernel>(outer, data[axis], inner * int64_t(dtype_size(op.inputs[0].dtype)),
                                          op.inputs[1].numel(), op.inputs[1].dtype, op.context());
  return plain_plan(op, std::move(k));
}

}  // namespace

void register_gather_kernels() { register_kernel("Gather", make_gather); }

}  // namespace tandem::cpu
