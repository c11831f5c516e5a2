// batch_norm (training or eval) and its backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct BatchNormFn : GradFn {
  BatchNormFn(const BatchNormParams& p, Tensor s) : params(p), saved(std::move(s)) {}
  const char* name() const override { return "batch_norm"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->batch_norm_backward(backend->ctx, params, inputs[0].value(), inputs[1].value(), saved, dy, d[0],
                                 d[1], d[2]);
  }
  BatchNormParams params;
  Tensor saved;  // the statistics the forward normalized with
};

}  // namespace

Var batch_norm(const Var& x, const Var& gamma, const Var& beta, const Tensor& running_mean,
               const Tensor& running_var, const BatchNormParams& p) {
  TANDEM_CHECK(gamma.defined() && beta.defined(), "batch_norm needs gamma and beta",
               {"", "", "batch_norm", x.defined() ? shape_str(x.shape()) : ""});
  const TrainBackend& be = train_backend("batch_norm", {&x, &gamma, &beta});
  Tensor y = empty_like(be, x, x.shape()), saved;
  be.batch_norm_forward(be.ctx, p, x.value(), gamma.value(), beta.value(), running_mean, running_var, y, &saved);
  return record<BatchNormFn>(std::move(y), be, {x, gamma, beta}, p, std::move(saved));
}

}  // namespace tandem::train
