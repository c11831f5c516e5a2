// The convolution epilogue and explicit NHWC padding (see conv_epilogue.h).
// Activations are ops/activation_math.h's, as every CUDA activation.
#include <string>

#include "cuda/check.h"
#include "cuda/conv_epilogue.h"
#include "cuda/float_convert.cuh"
#include "cuda/fused_activation.cuh"
#include "cuda/launch.h"

namespace tandem::cuda {

namespace {

template <typename T>
__global__ void epilogue_kernel(T* y, const T* bias, const T* residual, int64_t n, int64_t channels, ops::Activation act) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load(y, i);
    if (bias) v += load(bias, i % channels);
    if (residual) v += load(residual, i);
    store(y, i, apply_activation(act, v));
  }
}

// T is an unsigned integer of the element's size: padding only moves bits.
template <typename T>
__global__ void pad_kernel(const T* x, T* y, PadGeometry g) {
  const int64_t n = g.out_elements(), oh = g.out_h(), ow = g.out_w();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % g.c, rest = i / g.c;
    int64_t ox = rest % ow;
    rest /= ow;
    int64_t oy = rest % oh, b = rest / oh;
    int64_t ix = ox - g.left, iy = oy - g.top;
    bool inside = ix >= 0 && ix < g.w && iy >= 0 && iy < g.h;
    y[i] = inside ? x[((b * g.h + iy) * g.w + ix) * g.c + c] : T(0);
  }
}

// One thread per output pixel: gathers the pixel's channels from NCHW planes
// (coalesced across neighbouring pixels) and writes all 8 channels, zeros
// beyond g.c, as one 16-byte store.
__global__ void pack8_kernel(const uint16_t* x, uint4* y, PadGeometry g) {
  const int64_t pixels = g.n * g.out_h() * g.out_w(), plane = g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pixels; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = i % g.out_w(), rest = i / g.out_w();
    int64_t oy = rest % g.out_h(), b = rest / g.out_h();
    int64_t ix = ox - g.left, iy = oy - g.top;
    uint16_t v[8] = {};
    if (ix >= 0 && ix < g.w && iy >= 0 && iy < g.h) {
      const uint16_t* src = x + b * g.c * plane + iy * g.w + ix;
      for (int c = 0; c < g.c; ++c) v[c] = src[c * plane];
    }
    y[i] = make_uint4(v[0] | uint32_t(v[1]) << 16, v[2] | uint32_t(v[3]) << 16, v[4] | uint32_t(v[5]) << 16,
                      v[6] | uint32_t(v[7]) << 16);
  }
}

}  // namespace

void launch_pack_nchw_to_nhwc8(const void* x, void* y, const PadGeometry& g, const cudaDeviceProp& props,
                               cudaStream_t stream, const ErrorContext& where) {
  check(g.c >= 1 && g.c <= 8, "pack to 8 channels of " + std::to_string(g.c), where);
  int64_t pixels = g.n * g.out_h() * g.out_w();
  if (pixels == 0) return;
  pack8_kernel<<<blocks_for(pixels, props), kThreads, 0, stream>>>(static_cast<const uint16_t*>(x),
                                                                    static_cast<uint4*>(y), g);
  check_launch("pack8_kernel", where);
}

void launch_conv_epilogue(DType dtype, void* y, const void* bias, const void* residual, int64_t n,
                          int64_t channels, const ops::Activation& a, const cudaDeviceProp& props,
                          cudaStream_t stream, const ErrorContext& where) {
  if (n == 0) return;
  unsigned blocks = blocks_for(n, props);
  with_float_type(dtype, "CUDA conv epilogue", where, [&](auto t) {
    using T = decltype(t);
    epilogue_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias),
                                                        static_cast<const T*>(residual), n, channels, a);
  });
  check_launch("epilogue_kernel", where);
}

void launch_pad_nhwc(size_t element_size, const void* x, void* y, const PadGeometry& g, const cudaDeviceProp& props,
                     cudaStream_t stream, const ErrorContext& where) {
  int64_t n = g.out_elements();
  if (n == 0) return;
  unsigned blocks = blocks_for(n, props);
  if (element_size == 4)
    pad_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), g);
  else if (element_size == 2)
    pad_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), g);
  else
    throw Error::unsupported("CUDA NHWC padding of " + std::to_string(element_size) + "-byte elements", where);
  check_launch("pad_kernel", where);
}

}  // namespace tandem::cuda
