// fill: every element of a device tensor set to one value.
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, float value) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(p, i, value);
}

}  // namespace

void fill(void* ctx, const Tensor& t, float value) {
  const char* op = "fill";
  TrainContext& c = enter(ctx);
  TANDEM_CHECK(t.defined(), "fill of an undefined tensor", op_context(op, t));
  require_activations(c, op, {&t});
  int64_t n = t.numel();
  if (n == 0) return;
  ErrorContext where = op_context(op, t);
  with_float_type(t.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    fill_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(static_cast<T*>(t.raw()), n, value);
  });
  check_launch("fill_kernel", where);
}

}  // namespace tandem::cuda::train
