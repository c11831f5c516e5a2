// layer_norm (LayerNorm and LayerNorm2d) and its backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct LayerNormFn : GradFn {
  LayerNormFn(const ops::LayerNormParams& p, Tensor s) : params(p), saved(std::move(s)) {}
  const char* name() const override { return "layer_norm"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->layer_norm_backward(backend->ctx, params, inputs[0].value(), inputs[1].value(), saved,
                                 dy, d[0], d[1], d[2]);
  }
  ops::LayerNormParams params;
  Tensor saved;  // each vector's mean and 1 / sqrt(var + epsilon)
};

}  // namespace

Var layer_norm(const Var& x, const Var& gamma, const Var& beta, int64_t axis, int64_t end,
               float epsilon) {
  const ErrorContext where{"", "", "layer_norm", x.defined() ? shape_str(x.shape()) : ""};
  TANDEM_CHECK(x.defined() && gamma.defined(), "layer_norm needs x and gamma", where);
  const TrainBackend& be = train_backend("layer_norm", {&x, &gamma, &beta});
  check_supported(be.layer_norm_forward && be.layer_norm_backward,
                  std::string("the ") + be.name + " training kernels have no layer norm", where);
  const ops::LayerNormParams p = ops::layernorm_params(x.shape(), axis, end, epsilon);
  Tensor y = empty_like(be, x, x.shape()), saved;
  be.layer_norm_forward(be.ctx, p, x.value(), gamma.value(),
                        beta.defined() ? beta.value() : Tensor(), y, &saved);
  return record<LayerNormFn>(std::move(y), be, {x, gamma, beta}, p, std::move(saved));
}

}  // namespace tandem::train
