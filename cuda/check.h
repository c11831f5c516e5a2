#pragma once
// Every CUDA runtime, cuDNN and cuBLASLt status becomes a tandem::Error that
// names the call and, through ErrorContext, the op and node: a GPU failure
// is reported like any bad input, never an abort.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>
#include <utility>

#include "core/error.h"

namespace tandem::cuda {

// Out of device memory is its own kind of failure (ErrorKind::out_of_memory,
// which survives with_context): callers may retry with a smaller batch.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& message, ErrorContext ctx = {})
      : Error(message, std::move(ctx), ErrorKind::out_of_memory) {}
};

void throw_cuda(cudaError_t e, const char* what, const ErrorContext& ctx);
void throw_cudnn(cudnnStatus_t s, const char* what, const ErrorContext& ctx);
void throw_cublas(cublasStatus_t s, const char* what, const ErrorContext& ctx);

inline void check_cuda(cudaError_t e, const char* what, const ErrorContext& ctx = {}) {
  if (e != cudaSuccess) [[unlikely]]
    throw_cuda(e, what, ctx);
}
inline void check_cudnn(cudnnStatus_t s, const char* what, const ErrorContext& ctx = {}) {
  if (s != CUDNN_STATUS_SUCCESS) [[unlikely]]
    throw_cudnn(s, what, ctx);
}
inline void check_cublas(cublasStatus_t s, const char* what, const ErrorContext& ctx = {}) {
  if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_cublas(s, what, ctx);
}
// After a kernel launch: launch-configuration errors surface here.
inline void check_launch(const char* kernel, const ErrorContext& ctx = {}) {
  check_cuda(cudaGetLastError(), kernel, ctx);
}

}  // namespace tandem::cuda
