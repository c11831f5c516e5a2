// add with same-rank broadcasting; its backward sums dy over each input's
// broadcast axes.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct AddFn : GradFn {
  const char* name() const override { return "add"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->sum_to(backend->ctx, dy, d[0]);
    backend->sum_to(backend->ctx, dy, d[1]);
  }
};

}  // namespace

Var add(const Var& a, const Var& b) {
  const TrainBackend& be = train_backend("add", {&a, &b});
  Tensor y = empty_f32(be, add_output_shape(a.shape(), b.shape()));
  be.add_forward(be.ctx, a.value(), b.value(), y);
  return record<AddFn>(std::move(y), be, {a, b});
}

}  // namespace tandem::train
