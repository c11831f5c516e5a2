#pragma once
// tandem.Attention: Y = softmax(scale * Q K^T + bias) V over a batch of heads, each
// operand read, and Y written, through a strided view, so the head split and
// merge an exported graph writes around attention (Reshape, Transpose,
// Slice, Gather) are index arithmetic instead of copies.
// graph/fuse_attention.cpp makes it from MatMul -> Softmax -> MatMul.
//   inputs   q, k, v of any shape, one float dtype, and optionally a bias
//            of P * m * n elements, [P, m, n] dense: batch item b adds its
//            item b % P to its scores (Swin's relative-position bias, P =
//            heads, plus its shifted-window mask, P = windows * heads).
//            Element (b, i, j) of
//            Q [batch, m, d], K [batch, n, d] and V [batch, n, dv] is input
//            element offset + b * strides[0] + i * strides[1] + j * strides[2]
//            (offsets and strides in elements).
//   output   Y, dense, of shape `output_shape`; element (b, i, j) of the
//            [batch, m, dv] result lands at b * y[0] + i * y[1] + j * y[2].
// Every view must stay inside its tensor and Y's must cover it once.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/attributes.h"
#include "core/shape.h"

namespace tandem::ops {

inline constexpr const char* kAttentionOp = "tandem.Attention";

struct AttentionView {
  int64_t offset = 0;
  std::array<int64_t, 3> strides{};  // batch, row, column
};

struct AttentionParams {
  int64_t batch = 1, m = 0, n = 0, d = 0, dv = 0;
  float scale = 1.f;
  int64_t bias_period = 0;  // P; 0 without a bias
  AttentionView q, k, v, y;
  Shape output_shape;
};

// Reads and validates the attributes; throws Error on a malformed op.
// `input_numel` bounds each input's view (q, k, v) and, when there is a
// fourth, sizes the bias.
AttentionParams attention_params(const Attributes& a, const std::vector<int64_t>& input_numel);
void set_attention_attributes(Attributes& a, const AttentionParams& p);

// A [rows, cols] view as a BLAS takes it: row-major with leading dimension
// `ld`, or, when its columns are the contiguous axis, the transpose of a
// row-major [cols, rows] matrix. nullopt when neither axis is contiguous or
// the rows overlap.
struct StridedMatrix {
  bool transposed = false;
  int64_t ld = 0;
};
std::optional<StridedMatrix> strided_matrix(int64_t rows, int64_t cols, int64_t row_stride,
                                            int64_t col_stride);

// True when the GPU kernel can take the op as it is: every operand a strided
// matrix starting on a 16-byte boundary (8 elements cover any float dtype
// the op may be lowered to), Y's rows contiguous. The fusion makes no op
// that would leave the GPU.
bool attention_fits_blas(const AttentionParams& p);

}  // namespace tandem::ops
