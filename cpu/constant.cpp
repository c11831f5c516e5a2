// Ops whose output is known at prepare time: Constant, ConstantOfShape,
// Range, Shape and Size (the last two from the input's shape alone, so they
// run even when their input is not a constant).
#include <algorithm>
#include <cstring>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

// Writes a fixed byte pattern, repeated to fill the output.
class PatternKernel : public Kernel {
 public:
  PatternKernel(std::vector<uint8_t> pattern, size_t out_bytes)
      : pattern_(std::move(pattern)), out_bytes_(out_bytes) {}
  void run(const void* const*, void* const* out, const RunContext&) override {
    char* dst = static_cast<char*>(out[0]);
    if (pattern_.size() == out_bytes_) {
      if (out_bytes_) std::memcpy(dst, pattern_.data(), out_bytes_);
      return;
    }
    for (size_t i = 0; i + pattern_.size() <= out_bytes_; i += pattern_.size())
      std::memcpy(dst + i, pattern_.data(), pattern_.size());
  }

 private:
  std::vector<uint8_t> pattern_;
  size_t out_bytes_;
};

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  return std::vector<uint8_t>(p, p + t.bytes());
}

KernelPlan make_constant(const OpDesc& op) {
  Tensor v = ops::constant_attr_value(op.attributes());
  return plain_plan(op, std::make_unique<PatternKernel>(bytes_of(v), op.outputs[0].bytes()));
}

KernelPlan make_constant_of_shape(const OpDesc& op) {
  Tensor v = ops::constant_of_shape_value(op.attributes());
  return plain_plan(op, std::make_unique<PatternKernel>(bytes_of(v), op.outputs[0].bytes()));
}

// Range: start + i * delta computed in double (float dtypes) or int64.
KernelPlan make_range(const OpDesc& op) {
  ops::InferContext c = ops::infer_context_of(op);
  const Tensor &start = c.constant(0), &delta = c.constant(2);
  int64_t n = ops::range_count(start, c.constant(1), delta);
  Tensor out = Tensor::empty(op.outputs[0].dtype, {n});
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = num_t<T>;
    if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
      for (int64_t i = 0; i < n; ++i) store<T>(out.raw(), i, V(start.int_at(0) + i * delta.int_at(0)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        store<T>(out.raw(), i, V(start.scalar_at(0) + double(i) * delta.scalar_at(0)));
    }
  });
  return plain_plan(op, std::make_unique<PatternKernel>(bytes_of(out), out.bytes()));
}

// Shape and Size never read their input's bytes: take it in any layout so no
// reorder is inserted for them.
KernelPlan any_layout_input(const OpDesc& op, std::unique_ptr<Kernel> kernel) {
  KernelPlan plan = plain_plan(op, std::move(kernel));
  plan.input_layouts[0] = op.inputs[0].layout;
  return plan;
}

// Shape (with Shape-15 start/end) and Size, from the input desc.
KernelPlan make_shape(const OpDesc& op) {
  const Shape& in = op.inputs[0].shape;
  int64_t n = op.outputs[0].shape.at(0), r = int64_t(in.size());
  int64_t start = op.opset >= 15 ? op.attributes().get_int("start", 0) : 0;
  start = std::clamp(start < 0 ? start + r : start, int64_t(0), r);
  std::vector<int64_t> v(in.begin() + start, in.begin() + start + n);
  Tensor t = Tensor::from_vector(v, {n});
  return any_layout_input(op, std::make_unique<PatternKernel>(bytes_of(t), t.bytes()));
}

KernelPlan make_size(const OpDesc& op) {
  Tensor t = Tensor::from_vector<int64_t>({shape_numel(op.inputs[0].shape)}, {});
  return any_layout_input(op, std::make_unique<PatternKernel>(bytes_of(t), t.bytes()));
}

}  // namespace

void register_constant_kernels() {
  register_kernel("Constant", make_constant);
  register_kernel("ConstantOfShape", make_constant_of_shape);
  register_kernel("Range", make_range);
  register_kernel("Shape", make_shape);
  register_kernel("Size", make_size);
}

}  // namespace tandem::cpu
