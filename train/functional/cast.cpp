// Precision and layout changes: convert (a copy in another dtype and/or
// layout; its backward converts the gradient back) and, for a tensor whose
// bytes read the same in plain and nhwc, a relabelling without a copy.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

// Both ops' backward: dy into the input's gradient, converted to its dtype
// and layout (the table's sum_to and cast convert as they copy).
struct ConvertFn : GradFn {
  const char* name() const override { return "convert"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->cast(backend->ctx, dy, d[0]);
  }
};

}  // namespace

Var convert(const Var& x, DType dtype, Layout layout) {
  const TrainBackend& be = train_backend("convert", {&x});
  const Tensor& v = x.value();
  if (v.dtype() == dtype && v.layout() == layout) return x;
  if (v.dtype() == dtype && ops::layout_free(v.shape()) &&
      (layout == Layout::plain || layout == Layout::nhwc))
    return record<ConvertFn>(v.with_layout(layout), be, {x});
  Tensor y = empty_in(be, dtype, x.shape(), layout);
  be.cast(be.ctx, v, {y, GradMode::overwrite});
  return record<ConvertFn>(std::move(y), be, {x});
}

}  // namespace tandem::train
