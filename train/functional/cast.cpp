// cast between float precisions; its backward converts the gradient back.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct CastFn : GradFn {
  const char* name() const override { return "cast"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->cast(backend->ctx, dy, d[0]);
  }
};

}  // namespace

Var cast(const Var& x, DType dtype) {
  const TrainBackend& be = train_backend("cast", {&x});
  if (x.value().dtype() == dtype) return x;
  Tensor y = be.empty(be.ctx, dtype, x.shape());
  be.cast(be.ctx, x.value(), {y, GradMode::overwrite});
  return record<CastFn>(std::move(y), be, {x});
}

}  // namespace tandem::train
