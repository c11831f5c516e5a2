// Quantization-aware training on the GPU: fake quantization with its
// straight-through mask, and the observers' min/max. The rounding is
// ops/fake_quant.h's, the CPU table's own, so a QAT step on either device
// puts the same values on the same integer grid.
//   Per tensor (axis -1): any layout, the mask in the tensor's byte order.
//   Per channel (axis >= 0): plain layout (the weights', axis 0).
// scale and zero_point may be host tensors (an observer's qparams) or on
// this GPU; either way they are checked on the host before any launch.
#include <cmath>
#include <limits>
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/float_types.h"
#include "cuda/launch.h"
#include "cuda/train_context.h"
#include "ops/fake_quant.h"
#include "ops/quant_channels.h"

namespace tandem::cuda::train {

namespace {

// x as [outer, channels, inner]; per channel, only plain layout.
ops::QuantChannels channel_view(const char* op, const Tensor& x, int64_t axis) {
  TANDEM_CHECK_SUPPORTED(axis < 0 || x.layout() == Layout::plain,
                         "per-channel quantization of a channels-last tensor on cuda", op_context(op, x));
  return ops::quant_channels(x.shape(), axis, op_context(op, x));
}

// A small tensor's values on the host, wherever it lives.
template <typename T>
std::vector<T> host_values(TrainContext& c, const Tensor& t, const ErrorContext& where) {
  std::vector<T> v(size_t(t.numel()));
  if (v.empty()) return v;
  if (t.device().is_cpu())
    std::copy(t.data<T>(), t.data<T>() + t.numel(), v.begin());
  else
    read_back(c.gpu, v.data(), t.raw(), v.size() * sizeof(T), where);
  return v;
}

// The same values in a stream-ordered device tensor.
template <typename T>
Tensor device_values(TrainContext& c, const std::vector<T>& v, DType dtype, const ErrorContext& where) {
  Tensor d = device_empty(c.gpu, dtype, {int64_t(v.size())});
  check_cuda(cudaMemcpyAsync(d.raw(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, c.gpu.stream),
             "cudaMemcpyAsync(qparams)", where);
  // v is pageable: the copy has read it when the call returns.
  return d;
}

__global__ void fake_quant_kernel(ops::QuantChannels v, const float* x, const float* scale, const int64_t* zero_point,
                                  int64_t qmin, int64_t qmax, float* y, uint8_t* mask) {
  const int64_t n = v.outer * v.channels * v.inner;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / v.inner) % v.channels;
    const ops::FakeQuantResult r = ops::fake_quant(x[i], scale[c], zero_point[c], qmin, qmax);
    y[i] = r.y;
    mask[i] = r.in_range;
  }
}

__global__ void straight_through_kernel(const uint8_t* mask, const float* dy, float* dx, bool accumulate, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = mask[i] ? dy[i] : 0.f;
    dx[i] = accumulate ? __fadd_rn(dx[i], g) : g;
  }
}

struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};

// Float min/max through the integer atomics: non-negative floats order as
// their int bits, negative ones in reverse as their unsigned bits.
__device__ void atomic_min_float(float* p, float v) {
  if (v >= 0.f)
    atomicMin(reinterpret_cast<int*>(p), __float_as_int(v));
  else
    atomicMax(reinterpret_cast<unsigned*>(p), __float_as_uint(v));
}
__device__ void atomic_max_float(float* p, float v) {
  if (v >= 0.f)
    atomicMax(reinterpret_cast<int*>(p), __float_as_int(v));
  else
    atomicMin(reinterpret_cast<unsigned*>(p), __float_as_uint(v));
}

__global__ void min_max_init_kernel(float* lo, float* hi, int64_t channels) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < channels; c += int64_t(gridDim.x) * blockDim.x)
    lo[c] = INFINITY, hi[c] = -INFINITY;
}

// blockIdx.y: the channel; the blocks along x share its outer * inner values.
template <typename T>
__global__ void min_max_kernel(ops::QuantChannels v, const T* x, float* lo, float* hi) {
  const int64_t c = blockIdx.y, per_channel = v.outer * v.inner;
  float a = INFINITY, b = -INFINITY;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < per_channel;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = j / v.inner, i = j % v.inner;
    const float e = load(x, (o * v.channels + c) * v.inner + i);
    a = fminf(a, e), b = fmaxf(b, e);
  }
  a = block_reduce(a, MinOp{}, INFINITY);
  b = block_reduce(b, MaxOp{}, -INFINITY);
  if (threadIdx.x == 0) atomic_min_float(lo + c, a), atomic_max_float(hi + c, b);
}

}  // namespace

void fake_quant_forward(void* ctx, const ops::FakeQuantParams& p, const Tensor& x, const Tensor& scale,
                        const Tensor& zero_point, const Tensor& y, Tensor* saved) {
  const char* op = "fake_quant_forward";
  TrainContext& c = enter(ctx);
  const ErrorContext where = op_context(op, x);
  require_on_gpu(c, op, {&x, &y}, DType::f32, x.layout());
  require_shape(op, y, x.shape(), "y");
  TANDEM_CHECK(p.qmin < p.qmax, "empty integer range", where);
  const ops::QuantChannels v = channel_view(op, x, p.axis);
  TANDEM_CHECK(scale.dtype() == DType::f32 && scale.numel() == v.channels,
               "scale must be f32 with " + std::to_string(v.channels) + " values, got " + scale.desc().str(), where);
  TANDEM_CHECK(zero_point.dtype() == DType::i64 && zero_point.numel() == v.channels,
               "zero_point must be i64 with " + std::to_string(v.channels) + " values, got " +
                   zero_point.desc().str(),
               where);
  const std::vector<float> s = host_values<float>(c, scale, where);
  const std::vector<int64_t> z = host_values<int64_t>(c, zero_point, where);
  for (int64_t k = 0; k < v.channels; ++k) {
    TANDEM_CHECK(s[k] > 0 && std::isfinite(s[k]), "scale must be positive and finite", where);
    TANDEM_CHECK(z[k] >= p.qmin && z[k] <= p.qmax, "zero point outside the integer range", where);
  }
  const int64_t n = x.numel();
  *saved = device_empty(c.gpu, DType::u8, {n});
  if (n == 0) return;
  const Tensor ds = device_values(c, s, DType::f32, where), dz = device_values(c, z, DType::i64, where);
  fake_quant_kernel<<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
      v, static_cast<const float*>(x.raw()), static_cast<const float*>(ds.raw()),
      static_cast<const int64_t*>(dz.raw()), p.qmin, p.qmax, static_cast<float*>(y.raw()),
      static_cast<uint8_t*>(saved->raw()));
  check_launch("fake_quant_kernel", where);
}

void fake_quant_backward(void* ctx, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = "fake_quant_backward";
  TrainContext& c = enter(ctx);
  const ErrorContext where = op_context(op, dy);
  require_on_gpu(c, op, {&dy}, DType::f32, dy.layout());
  require_on_gpu(c, op, {&saved}, DType::u8);
  TANDEM_CHECK(saved.numel() == dy.numel(), "fake_quant's backward needs its forward's mask", where);
  GradPtr g = grad_ptr(c, op, dx, dy.shape(), DType::f32, dy.layout());
  const int64_t n = dy.numel();
  if (!g || n == 0) return;
  straight_through_kernel<<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
      static_cast<const uint8_t*>(saved.raw()), static_cast<const float*>(dy.raw()), static_cast<float*>(g.p),
      g.accumulate, n);
  check_launch("straight_through_kernel", where);
}

void min_max(void* ctx, const Tensor& x, int64_t axis, const Tensor& min, const Tensor& max) {
  const char* op = "min_max";
  TrainContext& c = enter(ctx);
  const ErrorContext where = op_context(op, x);
  // The observers read activations as the forward stored them (16-bit
  // under autocast, channels-last) and weights in f32.
  require_on_gpu(c, op, {&x}, x.dtype(), x.layout());
  require_f32(c, op, {&min, &max});
  TANDEM_CHECK(x.numel() > 0, "min/max of an empty tensor", where);
  const ops::QuantChannels v = channel_view(op, x, axis);
  require_shape(op, min, {v.channels}, "min");
  require_shape(op, max, {v.channels}, "max");
  TANDEM_CHECK(v.channels <= 65535, "min/max over more than 65,535 channels", where);
  float* lo = static_cast<float*>(min.raw());
  float* hi = static_cast<float*>(max.raw());
  min_max_init_kernel<<<blocks_for(v.channels, c.gpu.props), kThreads, 0, c.gpu.stream>>>(lo, hi, v.channels);
  check_launch("min_max_init_kernel", where);
  const int64_t per_channel = v.outer * v.inner;
  const unsigned along = unsigned(std::max<int64_t>(
      1, std::min<int64_t>((per_channel + kThreads - 1) / kThreads,
                           std::max<int64_t>(1, int64_t(c.gpu.props.multiProcessorCount) * 8 / v.channels))));
  const dim3 grid(along, unsigned(v.channels));
  with_float_type(x.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    min_max_kernel<T><<<grid, kThreads, 0, c.gpu.stream>>>(v, static_cast<const T*>(x.raw()), lo, hi);
  });
  check_launch("min_max_kernel", where);
}

}  // namespace tandem::cuda::train
