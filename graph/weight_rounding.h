#pragma once
// A convolution's weights as 8-bit integers, one scale per output channel,
// rounded two ways:
//   round_to_nearest    each weight alone (what every runtime's quantizer
//                       does when it has no data);
//   round_compensating  one input column at a time, the rounding error of
//                       each column spread over the columns not yet rounded
//                       in proportion to how the calibration inputs
//                       correlate (GPTQ, Frantar et al. 2022, the optimal
//                       brain surgeon's update for a layer's output):
//                       the output a layer gives on real inputs moves less
//                       than its weights alone would say.
#include <algorithm>
#include <vector>

#include "core/attributes.h"
#include "core/tensor.h"

namespace tandem {

struct IntegerWeights {
  Tensor values;              // i8 in [-127, 127], the weight's shape
  std::vector<float> scales;  // one per output channel (axis 0)
};

IntegerWeights round_to_nearest(const Tensor& w);

// The second moments E[x x^T] of the input patches a 2-D convolution
// multiplies its weights by, gathered over calibration batches: per group,
// the blocks on the diagonal of the matrix, each whole input channels of at
// most kMaxBlock columns (a 3x3 convolution over 1,024 channels has 9,216
// columns; its whole matrix would take minutes to factor on a small CPU,
// and a rounding error is mostly made up within nearby channels' taps).
// Positions are sampled evenly, at most `max_positions` a batch, which
// bounds the cost on large maps.
class ConvInputMoments {
 public:
  ConvInputMoments(const Attributes& conv_attrs, const Shape& x, const Shape& w,
                   int64_t max_positions = 2048);
  static constexpr int64_t kMaxBlock = 2048;
  void add(const Tensor& x);  // x: f32 [N, C, H, W] of the shape given above
  // Weight column count per group (C / group * KH * KW) and group count.
  int64_t columns() const { return k_; }
  int64_t groups() const { return groups_; }
  // Diagonal blocks: how many, their stride in columns, and each one's
  // width (the last may be narrower).
  int64_t blocks() const { return blocks_; }
  int64_t block_columns() const { return block_; }
  int64_t block_size(int64_t b) const { return std::min(block_, k_ - b * block_); }
  // One block's matrix, block_size(b) squared, row-major; averaged.
  std::vector<double> moments(int64_t group, int64_t block) const;
  int64_t samples() const { return samples_; }

 private:
  int64_t groups_, c_per_group_, kh_, kw_, k_, block_ = 1, blocks_ = 1;
  int64_t stride_[2], dilation_[2], pad_[2], out_[2], in_[2];
  int64_t max_positions_;
  int64_t samples_ = 0, batches_ = 0;
  std::vector<std::vector<double>> sums_;  // per group and block (upper triangles filled)
};

// GPTQ's rounding of `w` [M, C/group, KH, KW] given its input moments.
// Where the moments are degenerate (a column never active) that column is
// rounded to nearest; the result is never worse-defined than that.
IntegerWeights round_compensating(const Tensor& w, const ConvInputMoments& m);

}  // namespace tandem
