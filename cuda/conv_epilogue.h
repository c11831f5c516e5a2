#pragma once
// Device helpers of the cuDNN convolution (cuda/conv.cpp): the epilogue that
// cuDNN's fused bias+activation call cannot express, and the explicit zero
// padding that stands in for cuDNN's symmetric-only padding. Both work on
// NHWC tensors of f32, f16 or bf16 and run on the caller's stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "ops/activation.h"

namespace tandem::cuda {

// y[i] = act(y[i] + bias[i % channels] + residual[i]) over n elements of an
// NHWC tensor; bias and residual may be null (then they add nothing).
void launch_conv_epilogue(DType dtype, void* y, const void* bias, const void* residual, int64_t n,
                          int64_t channels, const ops::Activation& act, const cudaDeviceProp& props,
                          cudaStream_t stream, const ErrorContext& where);

// Copies NHWC x [n, h, w, c] into the middle of y [n, h + top + bottom,
// w + left + right, c] and zeroes the border.
struct PadGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  constexpr int64_t out_h() const { return h + top + bottom; }
  constexpr int64_t out_w() const { return w + left + right; }
  constexpr int64_t out_elements() const { return n * out_h() * out_w() * c; }
};
void launch_pad_nhwc(size_t element_size, const void* x, void* y, const PadGeometry& g,
                     const cudaDeviceProp& props, cudaStream_t stream, const ErrorContext& where);

// Copies NCHW x [n, c, h, w] of a 2-byte dtype, c <= 8, into NHWC y [n,
// h + top + bottom, w + left + right, 8], zero-filling the border and the
// channels from c on: tensor-core convolutions want 8-channel (16-byte)
// pixels, and a network's first layer (RGB) has 3.
void launch_pack_nchw_to_nhwc8(const void* x, void* y, const PadGeometry& g, const cudaDeviceProp& props,
                               cudaStream_t stream, const ErrorContext& where);

}  // namespace tandem::cuda
