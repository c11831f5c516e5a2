// Max, average and global average pooling, and their backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct Pool2dFn : GradFn {
  Pool2dFn(const ops::Pool2dParams& p, Tensor s) : params(p), saved(std::move(s)) {}
  const char* name() const override { return "pool2d"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->pool2d_backward(backend->ctx, params, saved, dy, d[0]);
  }
  ops::Pool2dParams params;
  Tensor saved;  // max pooling's workspace
};

}  // namespace

Var pool2d(const Var& x, const ops::Pool2dParams& p) {
  const TrainBackend& be = train_backend("pool2d", {&x});
  Tensor y = empty_like(be, x, ops::pool2d_output_shape(p, x.shape())), saved;
  be.pool2d_forward(be.ctx, p, x.value(), y, &saved);
  return record<Pool2dFn>(std::move(y), be, {x}, p, std::move(saved));
}

ops::Pool2dParams max_pool_params(int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  return {ops::PoolKind::max, {kernel, kernel}, {stride, stride}, {padding, padding}, {dilation, dilation}};
}

ops::Pool2dParams avg_pool_params(int64_t kernel, int64_t stride, int64_t padding, bool count_include_pad) {
  return {ops::PoolKind::average, {kernel, kernel}, {stride, stride}, {padding, padding}, {1, 1}, count_include_pad};
}

Var global_avg_pool2d(const Var& x) {
  TANDEM_CHECK(x.defined() && x.value().rank() == 4, "global_avg_pool2d wants x [N, C, H, W]",
               {"", "", "global_avg_pool2d", x.defined() ? shape_str(x.shape()) : ""});
  ops::Pool2dParams p{ops::PoolKind::average, {x.shape()[2], x.shape()[3]}};
  return pool2d(x, p);
}

}  // namespace tandem::train
