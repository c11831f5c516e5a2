// Element-wise activations and their backward (from the input values).
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct ActivationFn : GradFn {
  explicit ActivationFn(const ops::Activation& p) : params(p) {}
  const char* name() const override { return "activation"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->eltwise_backward(backend->ctx, params, inputs[0].value(), dy, d[0]);
  }
  ops::Activation params;
};

}  // namespace

Var activation(const Var& x, const ops::Activation& p) {
  const TrainBackend& be = train_backend("activation", {&x});
  Tensor y = empty_like(be, x, x.shape());
  be.eltwise_forward(be.ctx, p, x.value(), y);
  return record<ActivationFn>(std::move(y), be, {x}, p);
}

Var relu(const Var& x) { return activation(x, {ops::ActivationKind::relu}); }
Var leaky_relu(const Var& x, float negative_slope) { return activation(x, {ops::ActivationKind::leaky_relu, negative_slope}); }
Var silu(const Var& x) { return activation(x, {ops::ActivationKind::silu}); }
Var hardswish(const Var& x) { return activation(x, {ops::ActivationKind::hard_swish}); }
Var sigmoid(const Var& x) { return activation(x, {ops::ActivationKind::sigmoid}); }
Var tanh(const Var& x) { return activation(x, {ops::ActivationKind::tanh}); }
Var gelu(const Var& x, bool tanh) {
  return activation(x, {tanh ? ops::ActivationKind::gelu_tanh : ops::ActivationKind::gelu});
}

}  // namespace tandem::train
