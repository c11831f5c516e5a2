// Max and average pooling for training, kernels of our own (cuDNN's pooling
// has no dilation), with the CPU table's windows (floor mode, symmetric
// padding; core/train_backend.h):
//   x / dx [N, C, H, W], y / dy [N, C, OH, OW]; one thread per output
//   forward, one per input backward (gathering from the windows that hold it,
//   so no atomics and the sum order is fixed).
//   max: the largest tap inside the input (the first, in row-major tap order,
//   among equals); saved: i32 [N*C*OH*OW], its position h * W + w in the plane.
//   avg: the sum of the taps inside the input over the full window
//   (count_include_pad) or over the taps inside; no saved state.
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train/common.h"

namespace tandem::cuda::train {

namespace {

// I: the index type. 32-bit wherever the tensors fit: the kernels are index
// arithmetic (divisions per element), and a 64-bit division costs several
// times a 32-bit one.
template <typename I>
struct Geometry {
  I planes, h, w, oh, ow;  // planes = N * C
  I kh, kw, sh, sw, ph, pw, dh, dw;
  bool max, include_pad;
};

template <typename I>
Geometry<I> geometry(const Pool2dParams& p, const Shape& x, const Shape& y) {
  return {I(x[0] * x[1]),
          I(x[2]),
          I(x[3]),
          I(y[2]),
          I(y[3]),
          I(p.kernel[0]),
          I(p.kernel[1]),
          I(p.stride[0]),
          I(p.stride[1]),
          I(p.padding[0]),
          I(p.padding[1]),
          I(p.dilation[0]),
          I(p.dilation[1]),
          p.kind == PoolKind::max,
          p.count_include_pad};
}

// True when every index of x and y (and the windows' reach) fits in 32 bits.
bool fits_int32(const Shape& x, const Shape& y) {
  return shape_numel(x) < INT32_MAX / 2 && shape_numel(y) < INT32_MAX / 2;
}

// The divisor of average window (i, j).
template <typename I>
__device__ __forceinline__ float window_size(const Geometry<I>& g, I i, I j) {
  if (g.include_pad) return float(g.kh * g.kw);
  I h0 = i * g.sh - g.ph, w0 = j * g.sw - g.pw;
  I h1 = h0 + g.kh < g.h ? h0 + g.kh : g.h, w1 = w0 + g.kw < g.w ? w0 + g.kw : g.w;
  return float((h1 - (h0 > 0 ? h0 : 0)) * (w1 - (w0 > 0 ? w0 : 0)));
}

template <typename T, typename I>
__global__ void forward_kernel(Geometry<I> g, const T* x, T* y, int32_t* argmax) {
  I n = g.planes * g.oh * g.ow;
  for (I o = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); o < n;
       o += I(gridDim.x) * I(blockDim.x)) {
    I plane = o / (g.oh * g.ow), r = o - plane * (g.oh * g.ow);
    I i = r / g.ow, j = r - i * g.ow;
    const T* xp = x + int64_t(plane) * g.h * g.w;
    float best = -INFINITY, sum = 0.f;
    int32_t at = -1;
    for (I a = 0; a < g.kh; ++a) {
      I h = i * g.sh - g.ph + a * g.dh;
      if (h < 0 || h >= g.h) continue;
      for (I b = 0; b < g.kw; ++b) {
        I w = j * g.sw - g.pw + b * g.dw;
        if (w < 0 || w >= g.w) continue;
        float v = load(xp, h * g.w + w);
        if (v > best) best = v, at = int32_t(h * g.w + w);
        sum += v;
      }
    }
    if (g.max) {
      store(y, o, best);
      argmax[o] = at;
    } else {
      store(y, o, sum / window_size(g, i, j));
    }
  }
}

// The windows along one axis that hold input position `pos`: for each tap t,
// output index (pos + pad - t * dil) / stride when that divides and lands in
// [0, out). Calls f(output index).
template <typename I, typename F>
__device__ __forceinline__ void windows_holding(I pos, I k, I stride, I pad, I dil, I out, F&& f) {
  for (I t = 0; t < k; ++t) {
    I q = pos + pad - t * dil;
    if (q < 0 || q % stride != 0 || q / stride >= out) continue;
    f(q / stride);
  }
}

template <typename T, typename I>
__global__ void backward_kernel(Geometry<I> g, const T* dy, const int32_t* argmax, T* dx,
                                bool accumulate) {
  I n = g.planes * g.h * g.w;
  for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < n;
       e += I(gridDim.x) * I(blockDim.x)) {
    I plane = e / (g.h * g.w), r = e - plane * (g.h * g.w);
    I h = r / g.w, w = r - h * g.w;
    I base = plane * g.oh * g.ow;
    float s = 0.f;
    windows_holding(h, g.kh, g.sh, g.ph, g.dh, g.oh, [&](I i) {
      windows_holding(w, g.kw, g.sw, g.pw, g.dw, g.ow, [&](I j) {
        I o = base + i * g.ow + j;
        if (!g.max)
          s += load(dy, o) / window_size(g, i, j);
        else if (argmax[o] == r)
          s += load(dy, o);
      });
    });
    store(dx, e, accumulate ? load(dx, e) + s : s);
  }
}

const char* op_name(const Pool2dParams& p, bool forward) {
  if (p.kind == PoolKind::max) return forward ? "max_pool2d_forward" : "max_pool2d_backward";
  return forward ? "avg_pool2d_forward" : "avg_pool2d_backward";
}

}  // namespace

void pool2d_forward(void* ctx, const Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = op_name(p, true);
  TrainContext& c = enter(ctx);
  require_float(c, op, {&x, &y});
  Shape ys = pool2d_output_shape(p, x.shape());
  require_shape(op, y, ys, "y");
  ErrorContext where = op_context(op, x);
  TANDEM_CHECK_SUPPORTED(x.dim(2) * x.dim(3) <= INT32_MAX, "a pooling plane over 2^31 elements",
                         where);
  *saved = Tensor();
  if (p.kind == PoolKind::max) *saved = device_empty(c.gpu, DType::i32, {shape_numel(ys)});
  int64_t n = shape_numel(ys);
  if (n == 0) return;
  int32_t* argmax = saved->defined() ? static_cast<int32_t*>(saved->raw()) : nullptr;
  const bool narrow = fits_int32(x.shape(), ys);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* xs = static_cast<const T*>(x.raw());
    T* yd = static_cast<T*>(y.raw());
    const unsigned blocks = blocks_for(n, c.gpu.props);
    if (narrow)
      forward_kernel<T><<<blocks, kThreads, 0, c.gpu.stream>>>(geometry<int32_t>(p, x.shape(), ys),
                                                               xs, yd, argmax);
    else
      forward_kernel<T><<<blocks, kThreads, 0, c.gpu.stream>>>(geometry<int64_t>(p, x.shape(), ys),
                                                               xs, yd, argmax);
  });
  check_launch("pool2d forward_kernel", where);
}

void pool2d_backward(void* ctx, const Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = op_name(p, false);
  TrainContext& c = enter(ctx);
  require_float(c, op, {&dy});
  if (!dx.wanted()) return;
  require_float(c, op, {&dy, &dx.t});
  Shape ys = pool2d_output_shape(p, dx.t.shape());
  require_shape(op, dy, ys, "dy");
  GradPtr g = grad_ptr(c, op, dx, dx.t.shape(), dy.dtype());
  ErrorContext where = op_context(op, dy);
  if (p.kind == PoolKind::max) {
    TANDEM_CHECK(saved.defined() && saved.dtype() == DType::i32 && saved.numel() == dy.numel(),
                 "max pooling's backward needs its forward's workspace", where);
    require_on_gpu(c, op, {&saved}, DType::i32);
  }
  int64_t n = dx.t.numel();
  if (n == 0) return;
  const int32_t* argmax = p.kind == PoolKind::max ? static_cast<const int32_t*>(saved.raw()) : nullptr;
  const bool narrow = fits_int32(dx.t.shape(), ys);
  with_float_type(dy.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* dys = static_cast<const T*>(dy.raw());
    T* dxs = static_cast<T*>(g.p);
    const unsigned blocks = blocks_for(n, c.gpu.props);
    if (narrow)
      backward_kernel<T><<<blocks, kThreads, 0, c.gpu.stream>>>(
          geometry<int32_t>(p, dx.t.shape(), ys), dys, argmax, dxs, g.accumulate);
    else
      backward_kernel<T><<<blocks, kThreads, 0, c.gpu.stream>>>(
          geometry<int64_t>(p, dx.t.shape(), ys), dys, argmax, dxs, g.accumulate);
  });
  check_launch("pool2d backward_kernel", where);
}

}  // namespace tandem::cuda::train
