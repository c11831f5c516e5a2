#pragma once
// The one loop behind Transpose, Slice, Expand, Tile and Pad on the CPU: a
// plain output filled element by element from a plain input through one
// offset table per output dim,
//   out[o_0, ..., o_n-1] = in_bytes[offsets[0][o_0] + ... + offsets[n-1][o_n-1]],
// or the fill element where any table entry is kNoSource (Pad's border).
// Tables are built once at prepare time; any dtype, by element size.
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "core/shape.h"

namespace tandem::cpu {

constexpr int64_t kNoSource = -1;

class IndexCopy {
 public:
  IndexCopy() = default;
  // offsets[d] has out_shape[d] byte offsets (>= 0) or kNoSource entries.
  IndexCopy(Shape out_shape, std::vector<std::vector<int64_t>> offsets, size_t elem_bytes);

  // Table for output dim d reading input index start + o * step of an input
  // dim with `stride` elements per step (Transpose, Slice, Expand).
  static std::vector<int64_t> strided(int64_t extent, int64_t start, int64_t step, int64_t stride,
                                      size_t elem_bytes);

  // `fill` is one element, read only where a table says kNoSource.
  void run(const void* in, void* out, const void* fill = nullptr) const;

 private:
  void copy_row(int64_t row, const char* in, char* out, const char* fill) const;

  Shape out_;
  std::vector<std::vector<int64_t>> offsets_;
  size_t elem_ = 1;
  int64_t rows_ = 0;       // product of all output extents but the last
  int64_t row_len_ = 1;    // last output extent
  bool contiguous_ = false;  // last dim reads consecutive input elements
};

// Kernel running one IndexCopy: input 0 -> output 0. When `fill_input` >= 0
// the fill element is read from that input at run time.
class IndexCopyKernel : public Kernel {
 public:
  IndexCopyKernel(IndexCopy copy, std::vector<uint8_t> fill = {}, int fill_input = -1)
      : copy_(std::move(copy)), fill_(std::move(fill)), fill_input_(fill_input) {}
  void run(const void* const* in, void* const* out, const RunContext& ctx) override;

 private:
  IndexCopy copy_;
  std::vector<uint8_t> fill_;
  int fill_input_;
};

// Plan with one kernel, every input and output in plain layout.
KernelPlan plain_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel);

// Plan for an elementwise kernel that reads its operands' memory as flat
// arrays of one shape: in the layout every input arrives in when they all
// share one and have the output's shape, that layout is not plain and pads
// no channels (a blocked layout's channels fill their blocks), so that a
// chain of such ops after a blocked convolution takes no reorders; plain
// otherwise.
KernelPlan elementwise_plan(const OpDesc& op, std::unique_ptr<Kernel> kernel);

}  // namespace tandem::cpu
