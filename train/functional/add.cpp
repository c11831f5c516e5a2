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

Var add(const Var& a_in, const Var& b_in) {
  const TrainBackend& be = train_backend("add", {&a_in, &b_in});
  // Mixed precisions add in f32 (PyTorch's promotion of f16 + f32); mixed
  // layouts in plain, unless one side reads the same in both (a bias).
  const bool same = a_in.value().dtype() == b_in.value().dtype();
  Var a = same ? a_in : to_f32(a_in), b = same ? b_in : to_f32(b_in);
  const Layout la = a.value().layout(), lb = b.value().layout();
  if (la != lb) {
    if (ops::layout_free(b.shape()))
      b = to_layout(b, la);
    else if (ops::layout_free(a.shape()))
      a = to_layout(a, lb);
    else
      a = to_layout(a, Layout::plain), b = to_layout(b, Layout::plain);
  }
  Tensor y = empty_like(be, a, ops::add_output_shape(a.shape(), b.shape()));
  be.add_forward(be.ctx, a.value(), b.value(), y);
  return record<AddFn>(std::move(y), be, {a, b});
}

}  // namespace tandem::train
