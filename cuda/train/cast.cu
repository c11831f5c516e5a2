// Precision changes for autocast (Conv2dParams::compute): a f32 tensor
// rounded into a 16-bit scratch copy before a tensor-core kernel, and the
// 16-bit result widened back into an f32 tensor (or added to it, for an
// accumulated gradient); and the table's cast entry, which autograd's cast
// op calls where a 16-bit activation meets an f32-only op.
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train/cast.h"

namespace tandem::cuda::train {

namespace {

template <typename To, typename From>
__global__ void cast_kernel(const From* x, To* y, int64_t n, bool accumulate) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load(x, i);
    store(y, i, accumulate ? load(y, i) + v : v);
  }
}

void launch(TrainContext& c, DType from, const void* src, DType to, void* dst, int64_t n, bool accumulate,
            const ErrorContext& where) {
  if (n == 0) return;
  with_float_type(from, "cast", where, [&](auto f) {
    with_float_type(to, "cast", where, [&](auto t) {
      using From = decltype(f);
      using To = decltype(t);
      cast_kernel<To, From><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
          static_cast<const From*>(src), static_cast<To*>(dst), n, accumulate);
    });
  });
  check_launch("cast_kernel", where);
}

}  // namespace

Tensor rounded_copy(TrainContext& c, const Tensor& x, DType to, const ErrorContext& where) {
  Tensor y = device_empty(c.gpu, to, x.shape());
  launch(c, x.dtype(), x.raw(), to, y.raw(), x.numel(), false, where);
  return y;
}

void widen_into(TrainContext& c, const Tensor& src, const Tensor& dst, bool accumulate, const ErrorContext& where) {
  TANDEM_CHECK(src.numel() == dst.numel(),
               "widening " + src.desc().str() + " into " + dst.desc().str(), where);
  launch(c, src.dtype(), src.raw(), dst.dtype(), dst.raw(), src.numel(), accumulate, where);
}

void cast(void* ctx, const Tensor& src, const GradOut& dst) {
  const char* op = "cast";
  TrainContext& c = enter(ctx);
  require_float(c, op, {&src});
  if (!dst.wanted()) return;
  require_float(c, op, {&dst.t});
  require_shape(op, dst.t, src.shape(), "dst");
  widen_into(c, src, dst.t, dst.mode == GradMode::accumulate, op_context(op, src));
}

}  // namespace tandem::cuda::train
