// Inverted dropout (identity in eval mode) and its backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct DropoutFn : GradFn {
  DropoutFn(const ops::DropoutParams& p, Tensor m) : params(p), mask(std::move(m)) {}
  const char* name() const override { return "dropout"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->dropout_backward(backend->ctx, params, mask, dy, d[0]);
  }
  ops::DropoutParams params;
  Tensor mask;
};

}  // namespace

Var dropout(const Var& x, float p, uint64_t seed, bool training) {
  const TrainBackend& be = train_backend("dropout", {&x});
  if (!training || p == 0) return x;
  ops::DropoutParams params{p, seed};
  Tensor y = empty_like(be, x, x.shape()), mask;
  be.dropout_forward(be.ctx, params, x.value(), y, &mask);
  return record<DropoutFn>(std::move(y), be, {x}, params, std::move(mask));
}

}  // namespace tandem::train
