#pragma once
// Owning wrappers for the cuDNN descriptors and the device buffers the conv
// and pooling kernels keep, so an Error thrown half-way through prepare leaks
// nothing.
#include <cudnn.h>

#include <cstddef>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "cuda/check.h"
#include "cuda/device_buffer.h"

namespace tandem::cuda {

// A cuDNN descriptor of one kind: Create/Destroy are its cudnnCreate*/cudnnDestroy*.
template <typename H, cudnnStatus_t (*Create)(H*), cudnnStatus_t (*Destroy)(H)>
class CudnnDescriptor {
 public:
  explicit CudnnDescriptor(const ErrorContext& where) { check_cudnn(Create(&h_), "cudnnCreate descriptor", where); }
  ~CudnnDescriptor() {
    if (h_) Destroy(h_);
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  H get() const { return h_; }

 private:
  H h_ = nullptr;
};

using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using ActivationDescriptor =
    CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;
using PoolingDescriptor = CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

inline cudnnDataType_t cudnn_dtype(DType t, const std::string& op, const ErrorContext& where) {
  if (t == DType::f32) return CUDNN_DATA_FLOAT;
  if (t == DType::f16) return CUDNN_DATA_HALF;
  if (t == DType::bf16) return CUDNN_DATA_BFLOAT16;
  throw Error::unsupported("CUDA " + op + " takes f32, f16 or bf16, not " + std::string(dtype_name(t)), where);
}

// An NHWC 4-D tensor descriptor; dims given in NCHW order as cuDNN wants.
inline void set_nhwc(const TensorDescriptor& d, cudnnDataType_t t, int64_t n, int64_t c, int64_t h, int64_t w,
                     const ErrorContext& where) {
  check_cudnn(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, t, int(n), int(c), int(h), int(w)),
              "cudnnSetTensor4dDescriptor", where);
}

inline size_t align_up(size_t bytes, size_t to = 256) { return (bytes + to - 1) / to * to; }

}  // namespace tandem::cuda
