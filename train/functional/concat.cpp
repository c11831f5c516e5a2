// concat along one axis; its backward hands each input its slice of dy.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct ConcatFn : GradFn {
  ConcatFn(int64_t a, std::vector<int64_t> e) : axis(a), extents(std::move(e)) {}
  const char* name() const override { return "concat"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->concat_backward(backend->ctx, axis, dy, extents, d);
  }
  int64_t axis;
  std::vector<int64_t> extents;  // each input's extent along the axis
};

}  // namespace

Var concat(std::span<const Var> xs, int64_t axis) {
  TANDEM_CHECK(!xs.empty(), "concat of no tensors");
  const TrainBackend& be = train_backend(xs[0].device());
  std::vector<Var> inputs(xs.begin(), xs.end());
  bool mixed = false, mixed_layouts = false;
  for (const Var& x : xs) {
    TANDEM_CHECK(x.device() == xs[0].device(),
                 "concat of tensors on " + xs[0].device().str() + " and " + x.device().str(),
                 {"", "", "concat", shape_str(x.shape())});
    mixed |= x.value().dtype() != xs[0].value().dtype();
    mixed_layouts |= x.value().layout() != xs[0].value().layout();
  }
  // Mixed precisions concatenate in f32, mixed layouts in plain.
  for (Var& x : inputs) {
    if (mixed) x = to_f32(x);
    if (mixed_layouts) x = to_layout(x, Layout::plain);
  }
  std::vector<Tensor> values;
  for (const Var& x : inputs) values.push_back(x.value());
  Tensor y = empty_like(be, inputs[0], ops::concat_output_shape(values, axis));
  be.concat_forward(be.ctx, axis, values, y);
  axis = normalize_axis(axis, y.rank());
  std::vector<int64_t> extents;
  for (const Tensor& v : values) extents.push_back(v.dim(axis));
  return record<ConcatFn>(std::move(y), be, std::move(inputs), axis, std::move(extents));
}

}  // namespace tandem::train
