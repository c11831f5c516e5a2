// Precision changes for autocast (ops::Conv2dParams::compute): a f32 tensor
// rounded into a 16-bit scratch copy before a tensor-core kernel, and the
// 16-bit result widened back into an f32 tensor (or added to it, for an
// accumulated gradient); layout changes between plain NCHW and nhwc
// (channels last: a batch entering the network, conv weights into cuDNN's
// KRSC filter order, their gradients back); and the table's cast entry,
// which autograd's cast op calls.
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/convert.h"

namespace tandem::cuda::train {

namespace {

// How a destination index maps to the source: the same, or a 4-D
// [N, C, H, W] tensor between its plain and nhwc byte orders.
enum class Permute : uint8_t { none, to_nhwc, to_plain };

struct Dims {
  int64_t c, h, w;
};

__device__ __forceinline__ int64_t source_index(Permute p, const Dims& d, int64_t i) {
  if (p == Permute::to_nhwc) {  // i walks [N, H, W, C]; the source is [N, C, H, W]
    int64_t c = i % d.c, t = i / d.c;
    int64_t x = t % d.w;
    t /= d.w;
    int64_t y = t % d.h, n = t / d.h;
    return ((n * d.c + c) * d.h + y) * d.w + x;
  }
  if (p == Permute::to_plain) {  // i walks [N, C, H, W]; the source is [N, H, W, C]
    int64_t x = i % d.w, t = i / d.w;
    int64_t y = t % d.h;
    t /= d.h;
    int64_t c = t % d.c, n = t / d.c;
    return ((n * d.h + y) * d.w + x) * d.c + c;
  }
  return i;
}

template <typename To, typename From>
__global__ void cast_kernel(const From* x, To* y, int64_t n, bool accumulate, Permute p, Dims d) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load(x, source_index(p, d, i));
    store(y, i, accumulate ? load(y, i) + v : v);
  }
}

Permute permute_of(const Tensor& src, const Tensor& dst, const ErrorContext& where) {
  const Layout from = src.layout(), to = dst.layout();
  TANDEM_CHECK_SUPPORTED((from == Layout::plain || from == Layout::nhwc) &&
                             (to == Layout::plain || to == Layout::nhwc),
                         "cast between " + src.desc().str() + " and " + dst.desc().str(), where);
  if (from == to || layout_free(src)) return Permute::none;
  TANDEM_CHECK(src.rank() == 4, "a layout change of " + src.desc().str(), where);
  return to == Layout::nhwc ? Permute::to_nhwc : Permute::to_plain;
}

void launch(TrainContext& c, const Tensor& src, const Tensor& dst, bool accumulate,
            const ErrorContext& where) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const Permute p = permute_of(src, dst, where);
  const Dims d = src.rank() == 4 ? Dims{src.dim(1), src.dim(2), src.dim(3)} : Dims{1, 1, 1};
  with_float_type(src.dtype(), "cast", where, [&](auto f) {
    with_float_type(dst.dtype(), "cast", where, [&](auto t) {
      using From = decltype(f);
      using To = decltype(t);
      cast_kernel<To, From><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
          static_cast<const From*>(src.raw()), static_cast<To*>(dst.raw()), n, accumulate, p, d);
    });
  });
  check_launch("cast_kernel", where);
}

// dst [rows, dst_row] from src [rows, src_row]: each row's first values,
// then zeros.
template <typename T>
__global__ void rows_kernel(const T* src, int64_t src_row, T* dst, int64_t dst_row, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / dst_row, k = i - r * dst_row;
    dst[i] = k < src_row ? src[r * src_row + k] : T(0.f);
  }
}

}  // namespace

Tensor with_channels(TrainContext& c, const Tensor& x, int64_t channels,
                     const ErrorContext& where) {
  TANDEM_CHECK(x.layout() == Layout::nhwc && x.rank() == 4, "a channel change of " + x.desc().str(),
               where);
  Shape s = x.shape();
  const int64_t from = s[1];
  s[1] = channels;
  Tensor y = device_empty(c.gpu, x.dtype(), s).with_layout(Layout::nhwc);
  const int64_t n = y.numel();
  if (n == 0) return y;
  with_float_type(x.dtype(), "with_channels", where, [&](auto zero) {
    using T = decltype(zero);
    rows_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        static_cast<const T*>(x.raw()), from, static_cast<T*>(y.raw()), channels, n);
  });
  check_launch("rows_kernel", where);
  return y;
}

Tensor converted_copy(TrainContext& c, const Tensor& x, DType to, Layout layout,
                      const ErrorContext& where) {
  Tensor y = device_empty(c.gpu, to, x.shape());
  if (layout != Layout::plain) y = y.with_layout(layout);
  launch(c, x, y, false, where);
  return y;
}

void convert_into(TrainContext& c, const Tensor& src, const Tensor& dst, bool accumulate,
                  const ErrorContext& where) {
  TANDEM_CHECK(src.shape() == dst.shape(),
               "converting " + src.desc().str() + " into " + dst.desc().str(), where);
  launch(c, src, dst, accumulate, where);
}

void cast(void* ctx, const Tensor& src, const GradOut& dst) {
  const char* op = "cast";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&src});
  if (!dst.wanted()) return;
  require_activations(c, op, {&dst.t});
  require_shape(op, dst.t, src.shape(), "dst");
  convert_into(c, src, dst.t, dst.mode == GradMode::accumulate, op_context(op, src));
}

}  // namespace tandem::cuda::train
