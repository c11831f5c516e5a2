#pragma once
// Row-major (batched) matrix product on cuBLASLt with fp32 accumulation:
//   D[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] (+ bias[N]) (relu)
// cuBLASLt is column-major; a row-major [M,N] D is a column-major [N,M] one,
// so D^T = op(B)^T op(A)^T is computed with B's bytes as cuBLASLt's A.
// CUBLAS_COMPUTE_32F, never TF32, so f32 results match the CPU to ~1e-6.
// The algorithm is chosen once, here, by cuBLASLt's heuristic.
#include <cublasLt.h>

#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "core/error.h"
#include "cuda/context.h"

namespace tandem::cuda {

struct LtMatmulSpec {
  DType dtype = DType::f32;  // A, B, C, D and bias: f32, f16 or bf16
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;  // A stored [K, M]
  bool trans_b = false;  // B stored [N, K]
  int64_t batch = 1;
  // Elements between consecutive batch items; 0 repeats one matrix.
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  // Elements between consecutive rows of each matrix as stored (A [M,K],
  // or [K,M] when trans_a); 0 means packed. Lets a matrix be a strided
  // view, such as one head's columns of a [tokens, heads * dim] tensor.
  int64_t ld_a = 0, ld_b = 0, ld_d = 0;
  float alpha = 1.f, beta = 0.f;
  bool with_c = false;  // C has D's shape, layout and batch stride
  const void* bias = nullptr;  // device [N] in dtype, added to every row; kept by the caller
  bool relu = false;           // applied last, after C and bias
};

// The kernels cuBLASLt may choose from, by TANDEM_CUBLASLT_KERNELS: unset
// or "any", its heuristic's best; "plain", the best of its first 32 that
// is a warp-level MMA kernel (Ampere's kind) or a CUDA-core one, without
// Hopper's warpgroup MMA, TMA or thread block clusters, else the best
// without clusters. compute-sanitizer's racecheck breaks down on Hopper's
// cluster GEMMs even when told not to check them (a hardware exception it
// fails to handle), so scripts/sanitize-gpu runs `tag` on the plain ones.
enum class LtKernels { any, plain };
// Throws Error for a value other than those.
LtKernels lt_kernels_from(const char* value);

class LtMatmul {
 public:
  LtMatmul(Context& c, const LtMatmulSpec& s, ErrorContext where);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  // `c` is ignored unless spec.with_c.
  void run(const void* a, const void* b, const void* c, void* d);

 private:
  void release();
  // A plain algorithm (LtKernels::plain) found among all of cuBLASLt's for
  // this matmul, each tile and stage count tried; nothing when none fits.
  std::optional<cublasLtMatmulHeuristicResult_t> search_plain(cudaDataType_t type,
                                                              size_t max_workspace);

  Context& ctx_;
  LtMatmulSpec s_;
  ErrorContext where_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t lt_a_ = nullptr, lt_b_ = nullptr, lt_d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace tandem::cuda
