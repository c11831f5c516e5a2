#pragma once
// Walks a plain output row by row and gives each operand's element offsets
// under numpy broadcasting (stride 0 along broadcast dims). Used by Where and
// the comparisons; shapes are fixed at prepare time.
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace tandem::cpu {

class BroadcastWalk {
 public:
  BroadcastWalk(Shape out, const std::vector<Shape>& operands) : out_(std::move(out)) {
    for (const Shape& s : operands) {
      std::vector<int64_t> st = contiguous_strides(s), full(out_.size(), 0);
      size_t lead = out_.size() - s.size();
      for (size_t d = 0; d < s.size(); ++d) full[lead + d] = s[d] == 1 ? 0 : st[d];
      strides_.push_back(full);
    }
    row_len_ = out_.empty() ? 1 : out_.back();
    int64_t n = shape_numel(out_);
    rows_ = row_len_ == 0 ? 0 : n / row_len_;
  }

  int64_t rows() const { return rows_; }
  int64_t row_len() const { return row_len_; }
  size_t operands() const { return strides_.size(); }
  // Stride of operand k along the last output dim (0 or 1 elements).
  int64_t last_stride(size_t k) const { return out_.empty() ? 0 : strides_[k].back(); }
  // Offset (elements) of operand k's element at the start of output row `row`.
  int64_t row_base(size_t k, int64_t row) const {
    int64_t base = 0;
    for (size_t d = out_.empty() ? 0 : out_.size() - 1; d-- > 0;) {
      base += (row % out_[d]) * strides_[k][d];
      row /= out_[d];
    }
    return base;
  }

 private:
  Shape out_;
  std::vector<std::vector<int64_t>> strides_;
  int64_t rows_ = 0, row_len_ = 1;
};

}  // namespace tandem::cpu
