// Max and average pooling for training, kernels of our own (cuDNN's pooling
// has no dilation), with the CPU table's windows (floor mode, symmetric
// padding; core/train_backend.h):
//   x / dx [N, C, H, W], y / dy [N, C, OH, OW], plain or nhwc (threads walk
//   the bytes' order, so neighbouring threads read neighbouring channels);
//   one thread per output forward, one per input backward (gathering from
//   the windows that hold it, so no atomics and the sum order is fixed).
//   max: the largest tap inside the input (the first, in row-major tap order,
//   among equals); saved: i32 [N*C*OH*OW], its position h * W + w in the plane.
//   avg: the sum of the taps inside the input over the full window
//   (count_include_pad) or over the taps inside; no saved state.
#include <type_traits>

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
  I planes, c, h, w, oh, ow;  // planes = N * C
  I kh, kw, sh, sw, ph, pw, dh, dw;
  bool max, include_pad;
};

template <typename I>
Geometry<I> geometry(const Pool2dParams& p, const Shape& x, const Shape& y) {
  return {I(x[0] * x[1]),
          I(x[1]),
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

// Where plane position p (h * W + w) of x's plane sits, from its base:
// plain planes are contiguous, nhwc ones interleave the channels.
template <bool kNhwc, typename I>
__device__ __forceinline__ I at(const Geometry<I>& g, I p) {
  return kNhwc ? p * g.c : p;
}

// Output index o (in y's byte order) as (n, c) and its position (i, j); the
// base of its x plane and of its y plane.
template <bool kNhwc, typename I>
struct Site {
  I i, j;
  int64_t x_base, y_base;
  __device__ __forceinline__ Site(const Geometry<I>& g, I o, I rows, I cols) {
    if (kNhwc) {
      I ch = o % g.c, t = o / g.c;
      j = t % cols, t /= cols;
      i = t % rows;
      I n = t / rows;
      x_base = int64_t(n) * g.h * g.w * g.c + ch;
      y_base = int64_t(n) * g.oh * g.ow * g.c + ch;
    } else {
      I plane = o / (rows * cols), r = o - plane * (rows * cols);
      i = r / cols, j = r - i * cols;
      x_base = int64_t(plane) * g.h * g.w;
      y_base = int64_t(plane) * g.oh * g.ow;
    }
  }
};

template <bool kNhwc, typename T, typename I>
__global__ void forward_kernel(Geometry<I> g, const T* x, T* y, int32_t* argmax) {
  I n = g.planes * g.oh * g.ow;
  for (I o = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); o < n;
       o += I(gridDim.x) * I(blockDim.x)) {
    const Site<kNhwc, I> site(g, o, g.oh, g.ow);
    const I i = site.i, j = site.j;
    const T* xp = x + site.x_base;
    float best = -INFINITY, sum = 0.f;
    int32_t at = -1;
    for (I a = 0; a < g.kh; ++a) {
      I h = i * g.sh - g.ph + a * g.dh;
      if (h < 0 || h >= g.h) continue;
      for (I b = 0; b < g.kw; ++b) {
        I w = j * g.sw - g.pw + b * g.dw;
        if (w < 0 || w >= g.w) continue;
        float v = load(xp, at<kNhwc>(g, h * g.w + w));
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

template <bool kNhwc, typename T, typename I>
__global__ void backward_kernel(Geometry<I> g, const T* dy, const int32_t* argmax, T* dx,
                                bool accumulate) {
  I n = g.planes * g.h * g.w;
  for (I e = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); e < n;
       e += I(gridDim.x) * I(blockDim.x)) {
    const Site<kNhwc, I> site(g, e, g.h, g.w);
    const I h = site.i, w = site.j, r = h * g.w + w;
    const int64_t base = site.y_base;
    float s = 0.f;
    windows_holding(h, g.kh, g.sh, g.ph, g.dh, g.oh, [&](I i) {
      windows_holding(w, g.kw, g.sw, g.pw, g.dw, g.ow, [&](I j) {
        int64_t o = base + at<kNhwc>(g, i * g.ow + j);
        if (!g.max)
          s += load(dy, o) / window_size(g, i, j);
        else if (argmax[o] == r)
          s += load(dy, o);
      });
    });
    store(dx, e, accumulate ? load(dx, e) + s : s);
  }
}

// Calls f(I{}, std::bool_constant<nhwc>{}): the index type and the layout
// each kernel instantiates for.
template <typename F>
void with_index_and_layout(bool narrow, Layout layout, F&& f) {
  const bool nhwc = layout == Layout::nhwc;
  if (narrow && nhwc)
    f(int32_t{}, std::true_type{});
  else if (narrow)
    f(int32_t{}, std::false_type{});
  else if (nhwc)
    f(int64_t{}, std::true_type{});
  else
    f(int64_t{}, std::false_type{});
}

const char* op_name(const Pool2dParams& p, bool forward) {
  if (p.kind == PoolKind::max) return forward ? "max_pool2d_forward" : "max_pool2d_backward";
  return forward ? "avg_pool2d_forward" : "avg_pool2d_backward";
}

}  // namespace

void pool2d_forward(void* ctx, const Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = op_name(p, true);
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&x, &y});
  TANDEM_CHECK(x.rank() == 4, "pooling wants x [N, C, H, W]", op_context(op, x));
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
    auto run = [&](auto index, auto nhwc) {
      using I = decltype(index);
      forward_kernel<decltype(nhwc)::value, T>
          <<<blocks, kThreads, 0, c.gpu.stream>>>(geometry<I>(p, x.shape(), ys), xs, yd, argmax);
    };
    with_index_and_layout(narrow, d.layout, run);
  });
  check_launch("pool2d forward_kernel", where);
}

void pool2d_backward(void* ctx, const Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = op_name(p, false);
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&dy});
  if (!dx.wanted()) return;
  const ActivationDesc d = require_activations(c, op, {&dy, &dx.t});
  TANDEM_CHECK(dx.t.rank() == 4, "pooling wants dx [N, C, H, W]", op_context(op, dx.t));
  Shape ys = pool2d_output_shape(p, dx.t.shape());
  require_shape(op, dy, ys, "dy");
  GradPtr g = grad_ptr(c, op, dx, dx.t.shape(), dy.dtype(), d.layout);
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
    auto run = [&](auto index, auto nhwc) {
      using I = decltype(index);
      backward_kernel<decltype(nhwc)::value, T><<<blocks, kThreads, 0, c.gpu.stream>>>(
          geometry<I>(p, dx.t.shape(), ys), dys, argmax, dxs, g.accumulate);
    };
    with_index_and_layout(narrow, d.layout, run);
  });
  check_launch("pool2d backward_kernel", where);
}

}  // namespace tandem::cuda::train
