// Max and average pooling for training, kernels of our own (cuDNN's pooling
// has no dilation), with the CPU table's windows (floor mode, symmetric
// padding; ops/train_backend.h):
//   x / dx [N, C, H, W], y / dy [N, C, OH, OW], plain or nhwc; one thread
//   per output forward, one per input backward (gathering from the windows
//   that hold it, so no atomics and the sum order is fixed). In nhwc a
//   thread takes 16 bytes of neighbouring channels (one vector access per
//   tap, the window arithmetic shared): ResNet-18's max-pool backward took
//   4.3 ms per batch of 256 on an H200 one channel per thread.
//   max: the largest tap inside the input (the first, in row-major tap order,
//   among equals; a NaN wins, in every layout, as in PyTorch); saved: i32
//   [N*C*OH*OW], its position h * W + w in the plane.
//   avg: the sum of the taps inside the input over the full window
//   (count_include_pad) or over the taps inside; no saved state.
#include <type_traits>

#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train_context.h"

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
Geometry<I> geometry(const ops::Pool2dParams& p, const Shape& x, const Shape& y) {
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
          p.kind == ops::PoolKind::max,
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

// Output index o as its plane and position (i, j) in a rows x cols plane;
// the bases of its x plane and of its y plane.
template <typename I>
struct Site {
  I i, j;
  int64_t x_base, y_base;
  __device__ __forceinline__ Site(const Geometry<I>& g, I o, I rows, I cols) {
    I plane = o / (rows * cols), r = o - plane * (rows * cols);
    i = r / cols, j = r - i * cols;
    x_base = int64_t(plane) * g.h * g.w;
    y_base = int64_t(plane) * g.oh * g.ow;
  }
};

template <typename T, typename I>
__global__ void forward_kernel(Geometry<I> g, const T* x, T* y, int32_t* argmax) {
  I n = g.planes * g.oh * g.ow;
  for (I o = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); o < n;
       o += I(gridDim.x) * I(blockDim.x)) {
    const Site<I> site(g, o, g.oh, g.ow);
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
        float v = load(xp, h * g.w + w);
        // NaN wins and stays (PyTorch's rule; cuDNN's inference pooling
        // propagates it too), so a diverged activation is not hidden.
        if (v > best || v != v) best = v, at = int32_t(h * g.w + w);
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
  if (dil ==
      1) {  // the windows [ceil((pos + pad - k + 1) / stride), (pos + pad) / stride]: two divisions
    const I hi = pos + pad, lo = hi - k + 1;
    const I first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
    const I last = hi / stride < out ? hi / stride : out - 1;
    for (I i = last; i >= first; --i) f(i);  // descending, as the tap loop below visits them
    return;
  }
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
    const Site<I> site(g, e, g.h, g.w);
    const I h = site.i, w = site.j, r = h * g.w + w;
    const int64_t base = site.y_base;
    float s = 0.f;
    windows_holding(h, g.kh, g.sh, g.ph, g.dh, g.oh, [&](I i) {
      windows_holding(w, g.kw, g.sw, g.pw, g.dw, g.ow, [&](I j) {
        int64_t o = base + i * g.ow + j;
        if (!g.max)
          s += load(dy, o) / window_size(g, i, j);
        else if (argmax[o] == r)
          s += load(dy, o);
      });
    });
    store(dx, e, accumulate ? load(dx, e) + s : s);
  }
}

// Channels last: each thread takes V neighbouring channels of one position
// (V * sizeof(T) = 16 bytes where C allows: one vector access per tap, and
// the index arithmetic shared by V channels). y, argmax and dx in nhwc
// order; argmax holds the plane position h * W + w, as in plain.
template <int V, typename T, typename I>
__global__ void forward_nhwc_kernel(Geometry<I> g, const T* x, T* y, int32_t* argmax) {
  const I vectors = g.c / V, n = g.planes / g.c * g.oh * g.ow * vectors;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < n;
       t += I(gridDim.x) * I(blockDim.x)) {
    I r = t / vectors;
    const I v = t - r * vectors, j = r % g.ow;
    r /= g.ow;
    const I i = r % g.oh, batch = r / g.oh;
    const T* xp = x + int64_t(batch) * g.h * g.w * g.c + int64_t(v) * V;
    float best[V], sum[V];
    int32_t at[V];
    for (int k = 0; k < V; ++k) best[k] = -INFINITY, sum[k] = 0.f, at[k] = -1;
    for (I a = 0; a < g.kh; ++a) {
      const I h = i * g.sh - g.ph + a * g.dh;
      if (h < 0 || h >= g.h) continue;
      for (I b = 0; b < g.kw; ++b) {
        const I w = j * g.sw - g.pw + b * g.dw;
        if (w < 0 || w >= g.w) continue;
        const Pack<V, T> in = *reinterpret_cast<const Pack<V, T>*>(xp + int64_t(h * g.w + w) * g.c);
        for (int k = 0; k < V; ++k) {
          const float val = to_float(in.v[k]);
          // NaN wins and stays, as in the plain kernel above.
          if (val > best[k] || val != val) best[k] = val, at[k] = int32_t(h * g.w + w);
          sum[k] += val;
        }
      }
    }
    Pack<V, T> out;
    const float div = g.max ? 1.f : window_size(g, i, j);
    for (int k = 0; k < V; ++k) out.v[k] = from_float<T>(g.max ? best[k] : sum[k] / div);
    *reinterpret_cast<Pack<V, T>*>(y + int64_t(t) * V) = out;
    if (g.max)
      for (int k = 0; k < V; ++k) argmax[int64_t(t) * V + k] = at[k];
  }
}

template <int V, typename T, typename I>
__global__ void backward_nhwc_kernel(Geometry<I> g, const T* dy, const int32_t* argmax, T* dx,
                                     bool accumulate) {
  const I vectors = g.c / V, n = g.planes / g.c * g.h * g.w * vectors;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < n;
       t += I(gridDim.x) * I(blockDim.x)) {
    I r = t / vectors;
    const I v = t - r * vectors, w = r % g.w;
    r /= g.w;
    const I h = r % g.h, batch = r / g.h, pos = h * g.w + w;
    const int64_t base = int64_t(batch) * g.oh * g.ow * g.c + int64_t(v) * V;
    float s[V];
    for (int k = 0; k < V; ++k) s[k] = 0.f;
    windows_holding(h, g.kh, g.sh, g.ph, g.dh, g.oh, [&](I i) {
      windows_holding(w, g.kw, g.sw, g.pw, g.dw, g.ow, [&](I j) {
        const int64_t o = base + int64_t(i * g.ow + j) * g.c;
        const Pack<V, T> d = *reinterpret_cast<const Pack<V, T>*>(dy + o);
        if (!g.max) {
          const float div = window_size(g, i, j);
          for (int k = 0; k < V; ++k) s[k] += to_float(d.v[k]) / div;
        } else {
          for (int k = 0; k < V; ++k)
            if (argmax[o + k] == pos) s[k] += to_float(d.v[k]);
        }
      });
    });
    T* out = dx + int64_t(t) * V;
    Pack<V, T> res;
    if (accumulate) res = *reinterpret_cast<const Pack<V, T>*>(out);
    for (int k = 0; k < V; ++k)
      res.v[k] = from_float<T>(accumulate ? to_float(res.v[k]) + s[k] : s[k]);
    *reinterpret_cast<Pack<V, T>*>(out) = res;
  }
}

// Calls f(I{}): 32-bit indices where the tensors allow.
template <typename F>
void with_index(bool narrow, F&& f) {
  if (narrow)
    f(int32_t{});
  else
    f(int64_t{});
}

const char* op_name(const ops::Pool2dParams& p, bool forward) {
  if (p.kind == ops::PoolKind::max) return forward ? "max_pool2d_forward" : "max_pool2d_backward";
  return forward ? "avg_pool2d_forward" : "avg_pool2d_backward";
}

}  // namespace

void pool2d_forward(void* ctx, const ops::Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = op_name(p, true);
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&x, &y});
  TANDEM_CHECK(x.rank() == 4, "pooling wants x [N, C, H, W]", op_context(op, x));
  Shape ys = ops::pool2d_output_shape(p, x.shape());
  require_shape(op, y, ys, "y");
  ErrorContext where = op_context(op, x);
  TANDEM_CHECK_SUPPORTED(x.dim(2) * x.dim(3) <= INT32_MAX, "a pooling plane over 2^31 elements",
                         where);
  *saved = Tensor();
  if (p.kind == ops::PoolKind::max) *saved = device_empty(c.gpu, DType::i32, {shape_numel(ys)});
  int64_t n = shape_numel(ys);
  if (n == 0) return;
  int32_t* argmax = saved->defined() ? static_cast<int32_t*>(saved->raw()) : nullptr;
  const bool narrow = fits_int32(x.shape(), ys);
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* xs = static_cast<const T*>(x.raw());
    T* yd = static_cast<T*>(y.raw());
    with_index(narrow, [&](auto index) {
      using I = decltype(index);
      const Geometry<I> geo = geometry<I>(p, x.shape(), ys);
      if (d.layout != Layout::nhwc) {
        forward_kernel<T>
            <<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(geo, xs, yd, argmax);
        return;
      }
      // 16 bytes of channels per thread where C is a multiple of that.
      with_pack<T>(x.dim(1) % kPackOf<T> == 0, [&](auto v) {
        constexpr int V = decltype(v)::value;
        forward_nhwc_kernel<V, T>
            <<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(geo, xs, yd, argmax);
      });
    });
  });
  check_launch("pool2d forward_kernel", where);
}

void pool2d_backward(void* ctx, const ops::Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = op_name(p, false);
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&dy});
  if (!dx.wanted()) return;
  const ActivationDesc d = require_activations(c, op, {&dy, &dx.t});
  TANDEM_CHECK(dx.t.rank() == 4, "pooling wants dx [N, C, H, W]", op_context(op, dx.t));
  Shape ys = ops::pool2d_output_shape(p, dx.t.shape());
  require_shape(op, dy, ys, "dy");
  GradPtr g = grad_ptr(c, op, dx, dx.t.shape(), dy.dtype(), d.layout);
  ErrorContext where = op_context(op, dy);
  if (p.kind == ops::PoolKind::max) {
    TANDEM_CHECK(saved.defined() && saved.dtype() == DType::i32 && saved.numel() == dy.numel(),
                 "max pooling's backward needs its forward's workspace", where);
    require_on_gpu(c, op, {&saved}, DType::i32);
  }
  int64_t n = dx.t.numel();
  if (n == 0) return;
  const int32_t* argmax = p.kind == ops::PoolKind::max ? static_cast<const int32_t*>(saved.raw()) : nullptr;
  const bool narrow = fits_int32(dx.t.shape(), ys);
  with_float_type(dy.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    const T* dys = static_cast<const T*>(dy.raw());
    T* dxs = static_cast<T*>(g.p);
    with_index(narrow, [&](auto index) {
      using I = decltype(index);
      const Geometry<I> geo = geometry<I>(p, dx.t.shape(), ys);
      if (d.layout != Layout::nhwc) {
        backward_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            geo, dys, argmax, dxs, g.accumulate);
        return;
      }
      with_pack<T>(dx.t.dim(1) % kPackOf<T> == 0, [&](auto v) {
        constexpr int V = decltype(v)::value;
        backward_nhwc_kernel<V, T><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            geo, dys, argmax, dxs, g.accumulate);
      });
    });
  });
  check_launch("pool2d backward_kernel", where);
}

}  // namespace tandem::cuda::train
