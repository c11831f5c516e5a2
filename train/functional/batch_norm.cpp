// batch_norm (training or eval) and its backward; batch_norm_relu, fused
// where the table has an entry for it, else composed.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct BatchNormFn : GradFn {
  BatchNormFn(const ops::BatchNormParams& p, Tensor s) : params(p), saved(std::move(s)) {}
  const char* name() const override { return "batch_norm"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->batch_norm_backward(backend->ctx, params, inputs[0].value(), inputs[1].value(), saved, dy, d[0],
                                 d[1], d[2]);
  }
  ops::BatchNormParams params;
  Tensor saved;  // the statistics the forward normalized with
};

}  // namespace

Var batch_norm(const Var& x, const Var& gamma, const Var& beta, const Tensor& running_mean,
               const Tensor& running_var, const ops::BatchNormParams& p) {
  TANDEM_CHECK(gamma.defined() && beta.defined(), "batch_norm needs gamma and beta",
               {"", "", "batch_norm", x.defined() ? shape_str(x.shape()) : ""});
  const TrainBackend& be = train_backend("batch_norm", {&x, &gamma, &beta});
  Tensor y = empty_like(be, x, x.shape()), saved;
  be.batch_norm_forward(be.ctx, p, x.value(), gamma.value(), beta.value(), running_mean, running_var, y, &saved);
  return record<BatchNormFn>(std::move(y), be, {x, gamma, beta}, p, std::move(saved));
}

namespace {

struct BatchNormReluFn : GradFn {
  BatchNormReluFn(const ops::BatchNormParams& p, Tensor out, Tensor s)
      : params(p), y(std::move(out)), saved(std::move(s)) {}
  const char* name() const override { return "batch_norm_relu"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    const Tensor z = inputs[3].defined() ? inputs[3].value() : Tensor();
    backend->batch_norm_relu_backward(backend->ctx, params, inputs[0].value(), z, inputs[1].value(),
                                      inputs[2].value(), y, saved, dy, d[0], d[3], d[1], d[2]);
  }
  ops::BatchNormParams params;
  // The op's own output (its storage, not its Var: no cycle through the
  // tape), from which the backward masks dy.
  Tensor y;
  Tensor saved;
};

bool residual_matches(const Var& x, const Var& r) {
  return !r.defined() || (r.shape() == x.shape() && r.value().dtype() == x.value().dtype() &&
                          r.value().layout() == x.value().layout());
}

}  // namespace

Var batch_norm_relu(const Var& x, const Var& gamma, const Var& beta, const Tensor& running_mean,
                    const Tensor& running_var, const ops::BatchNormParams& p, const Var& residual) {
  TANDEM_CHECK(gamma.defined() && beta.defined(), "batch_norm_relu needs gamma and beta",
               {"", "", "batch_norm_relu", x.defined() ? shape_str(x.shape()) : ""});
  const TrainBackend& be = train_backend("batch_norm_relu", {&x, &gamma, &beta, &residual});
  if (be.batch_norm_relu_forward && residual_matches(x, residual)) {
    Tensor y = empty_like(be, x, x.shape()), saved;
    const Tensor z = residual.defined() ? residual.value() : Tensor();
    if (be.batch_norm_relu_forward(be.ctx, p, x.value(), z, gamma.value(), beta.value(),
                                   running_mean, running_var, y, &saved))
      return record<BatchNormReluFn>(y, be, {x, gamma, beta, residual}, p, y, std::move(saved));
  }
  Var y = batch_norm(x, gamma, beta, running_mean, running_var, p);
  return relu(residual.defined() ? add(y, residual) : y);
}

}  // namespace tandem::train
