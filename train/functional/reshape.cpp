// reshape and flatten: a view of the same values; the backward reshapes dy.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct ReshapeFn : GradFn {
  const char* name() const override { return "reshape"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->sum_to(backend->ctx, dy.reshaped(inputs[0].shape()), d[0]);
  }
};

}  // namespace

Var reshape(const Var& x_in, const Shape& shape) {
  const TrainBackend& be = train_backend("reshape", {&x_in});
  // A reshape reads the logical (plain) order: a channels-last x is
  // converted first (relabelled, when its bytes are the same: [N, C, 1, 1]).
  const Var x = to_layout(x_in, Layout::plain);
  TANDEM_CHECK(shape_numel(shape) == x.value().numel(),
               "cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape),
               {"", "", "reshape", shape_str(x.shape())});
  return record<ReshapeFn>(x.value().reshaped(shape), be, {x});
}

Var flatten(const Var& x, int64_t start_dim) {
  const Shape& s = x.shape();
  size_t start = size_t(normalize_axis(start_dim, int64_t(s.size())));
  Shape flat(s.begin(), s.begin() + int64_t(start));
  flat.push_back(shape_numel(Shape(s.begin() + int64_t(start), s.end())));
  return reshape(x, flat);
}

}  // namespace tandem::train
