#pragma once
// Gemm, MatMul (ONNX opsets 11-17) and tandem.FusedGemm.
//   Gemm:  A [M,K] ([K,M] if transA), B [K,N] ([N,K] if transB), C optional,
//          unidirectionally broadcastable to [M,N];  Y = alpha*A'*B' + beta*C
//   MatMul: numpy.matmul: [..., M, K] x [..., K, N] -> [broadcast(...), M, N];
//          a 1-D A is [1,K] and a 1-D B is [K,1], that extent dropped from Y.
//   tandem.FusedGemm: Gemm + activation/activation_params (ops/activation.h).
#include "core/attributes.h"
#include "core/shape.h"
#include "ops/activation.h"

namespace tandem::ops {

struct GemmParams {
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  int64_t m = 0, k = 0, n = 0;
};
// Validates A/B (2-D, matching K) and C (broadcastable to [M,N]) when given.
GemmParams gemm_params(const Attributes& attrs, const Shape& a, const Shape& b, const Shape* c);

// Output shape of numpy.matmul; throws Error on mismatched K or batch dims.
Shape matmul_output_shape(const Shape& a, const Shape& b);

// Training's linear layer: x [N, K], w [M, K] -> y [N, M].
Shape linear_output_shape(const Shape& x, const Shape& w);

inline constexpr const char* kFusedGemmOp = "tandem.FusedGemm";

}  // namespace tandem::ops
