// linear and its backward (data, weights and bias gradients in one call).
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct LinearFn : GradFn {
  const char* name() const override { return "linear"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->linear_backward(backend->ctx, inputs[0].value(), inputs[1].value(), dy, d[0], d[1], d[2]);
  }
};

}  // namespace

Var linear(const Var& x_in, const Var& w, const Var& b) {
  const TrainBackend& be = train_backend("linear", {&x_in, &w, &b});
  // The tables multiply f32 here: a 16-bit activation is widened first.
  const Var x = to_f32(x_in);
  Tensor y = empty_f32(be, ops::linear_output_shape(x.shape(), w.shape()));
  be.linear_forward(be.ctx, x.value(), w.value(), b.defined() ? b.value() : Tensor(), y);
  return record<LinearFn>(std::move(y), be, {x, w, b});
}

}  // namespace tandem::train
