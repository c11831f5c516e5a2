#include "cuda/check.h"

namespace tandem::cuda {

void throw_cuda(cudaError_t e, const char* what, const ErrorContext& ctx) {
  cudaGetLastError();  // clear a sticky-free error so the next call is not blamed
  std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory("out of GPU memory: " + msg, ctx);
  throw Error(msg, ctx);
}

void throw_cudnn(cudnnStatus_t s, const char* what, const ErrorContext& ctx) {
  std::string msg = std::string(what) + ": " + cudnnGetErrorString(s);
  if (s == CUDNN_STATUS_ALLOC_FAILED) throw OutOfMemory("out of GPU memory: " + msg, ctx);
  if (s == CUDNN_STATUS_NOT_SUPPORTED) throw Error::unsupported(msg, ctx);
  throw Error(msg, ctx);
}

void throw_cublas(cublasStatus_t s, const char* what, const ErrorContext& ctx) {
  std::string msg = std::string(what) + ": cuBLAS status " + std::to_string(int(s));
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory("out of GPU memory: " + msg, ctx);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) throw Error::unsupported(msg, ctx);
  throw Error(msg, ctx);
}

}  // namespace tandem::cuda
