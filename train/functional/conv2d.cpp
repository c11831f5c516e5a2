// conv2d and its backward (data, weights and bias gradients in one call).
#include "train/autocast.h"
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct Conv2dFn : GradFn {
  explicit Conv2dFn(const ops::Conv2dParams& p) : params(p) {}
  const char* name() const override { return "conv2d"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->conv2d_backward(backend->ctx, params, inputs[0].value(), inputs[1].value(), dy, d[0], d[1], d[2]);
  }
  ops::Conv2dParams params;
};

}  // namespace

Var conv2d(const Var& x, const Var& w, const Var& b, const ops::Conv2dParams& params) {
  const TrainBackend& be = train_backend("conv2d", {&x, &w, &b});
  ops::Conv2dParams p = params;
  if (p.compute == DType::f32) p.compute = autocast_dtype();
  // Under autocast a table that keeps 16-bit activations stores y in the
  // compute dtype (the next layers read half the bytes); else f32.
  const DType y_dtype = be.keeps_16bit_activations ? p.compute : DType::f32;
  // ... and in x's layout (channels last stays so).
  Tensor y =
      empty_in(be, y_dtype, ops::conv2d_output_shape(p, x.shape(), w.shape()), x.value().layout());
  be.conv2d_forward(be.ctx, p, x.value(), w.value(), b.defined() ? b.value() : Tensor(), y);
  return record<Conv2dFn>(std::move(y), be, {x, w, b}, p);
}

}  // namespace tandem::train
