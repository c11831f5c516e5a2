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

struct Geometry {
  int64_t planes, h, w, oh, ow;  // planes = N * C
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool max, include_pad;
};

Geometry geometry(const Pool2dParams& p, const Shape& x, const Shape& y) {
  return {x[0] * x[1], x[2], x[3], y[2], y[3], p.kernel[0], p.kernel[1], p.stride[0], p.stride[1],
          p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], p.kind == PoolKind::max, p.count_include_pad};
}

// The divisor of average window (i, j).
__device__ __forceinline__ float window_size(const Geometry& g, int64_t i, int64_t j) {
  if (g.include_pad) return float(g.kh * g.kw);
  int64_t h0 = i * g.sh - g.ph, w0 = j * g.sw - g.pw;
  int64_t h1 = h0 + g.kh < g.h ? h0 + g.kh : g.h, w1 = w0 + g.kw < g.w ? w0 + g.kw : g.w;
  return float((h1 - (h0 > 0 ? h0 : 0)) * (w1 - (w0 > 0 ? w0 : 0)));
}

template <typename T>
__global__ void forward_kernel(Geometry g, const T* x, T* y, int32_t* argmax) {
  int64_t n = g.planes * g.oh * g.ow;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = o / (g.oh * g.ow), r = o - plane * (g.oh * g.ow);
    int64_t i = r / g.ow, j = r - i * g.ow;
    const T* xp = x + plane * g.h * g.w;
    float best = -INFINITY, sum = 0.f;
    int32_t at = -1;
    for (int64_t a = 0; a < g.kh; ++a) {
      int64_t h = i * g.sh - g.ph + a * g.dh;
      if (h < 0 || h >= g.h) continue;
      for (int64_t b = 0; b < g.kw; ++b) {
        int64_t w = j * g.sw - g.pw + b * g.dw;
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
template <typename F>
__device__ __forceinline__ void windows_holding(int64_t pos, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                                                int64_t out, F&& f) {
  for (int64_t t = 0; t < k; ++t) {
    int64_t q = pos + pad - t * dil;
    if (q < 0 || q % stride != 0 || q / stride >= out) continue;
    f(q / stride);
  }
}

template <typename T>
__global__ void backward_kernel(Geometry g, const T* dy, const int32_t* argmax, T* dx, bool accumulate) {
  int64_t n = g.planes * g.h * g.w;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = e / (g.h * g.w), r = e - plane * (g.h * g.w);
    int64_t h = r / g.w, w = r - h * g.w;
    int64_t base = plane * g.oh * g.ow;
    float s = 0.f;
    windows_holding(h, g.kh, g.sh, g.ph, g.dh, g.oh, [&](int64_t i) {
      windows_holding(w, g.kw, g.sw, g.pw, g.dw, g.ow, [&](int64_t j) {
        int64_t o = base + i * g.ow + j;
        if (!g.max) s += load(dy, o) / window_size(g, i, j);
        else if (argmax[o] == r) s += load(dy, o);
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
  require_f32(c, op, {&x, &y});
  Shape ys = pool2d_output_shape(p, x.shape());
  require_shape(op, y, ys, "y");
  ErrorContext where = op_context(op, x);
  TANDEM_CHECK_SUPPORTED(x.dim(2) * x.dim(3) <= INT32_MAX, "a pooling plane over 2^31 elements", where);
  *saved = Tensor();
  if (p.kind == PoolKind::max) *saved = device_empty(c.gpu, DType::i32, {shape_numel(ys)});
  int64_t n = shape_numel(ys);
  if (n == 0) return;
  Geometry g = geometry(p, x.shape(), ys);
  int32_t* argmax = saved->defined() ? static_cast<int32_t*>(saved->raw()) : nullptr;
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        g, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), argmax);
  });
  check_launch("pool2d forward_kernel", where);
}

void pool2d_backward(void* ctx, const Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = op_name(p, false);
  TrainContext& c = enter(ctx);
  require_f32(c, op, {&dy});
  if (!dx.wanted()) return;
  require_f32(c, op, {&dx.t});
  Shape ys = pool2d_output_shape(p, dx.t.shape());
  require_shape(op, dy, ys, "dy");
  GradPtr g = grad_ptr(c, op, dx, dx.t.shape());
  ErrorContext where = op_context(op, dy);
  if (p.kind == PoolKind::max) {
    TANDEM_CHECK(saved.defined() && saved.dtype() == DType::i32 && saved.numel() == dy.numel(),
          "max pooling's backward needs its forward's workspace", where);
    require_on_gpu(c, op, {&saved}, DType::i32);
  }
  int64_t n = dx.t.numel();
  if (n == 0) return;
  Geometry geo = geometry(p, dx.t.shape(), ys);
  const int32_t* argmax = p.kind == PoolKind::max ? static_cast<const int32_t*>(saved.raw()) : nullptr;
  with_float_type(dy.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        geo, static_cast<const T*>(dy.raw()), argmax, static_cast<T*>(g.p), g.accumulate);
  });
  check_launch("pool2d backward_kernel", where);
}

}  // namespace tandem::cuda::train
