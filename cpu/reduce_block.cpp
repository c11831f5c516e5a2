// Float reductions (f32, f16, bf16) whose reduced axes form one contiguous block, the shape of
// almost every reduction in a CNN (global average pooling written as
// ReduceMean over H,W; squeeze-excite means; channel sums): the input is
// viewed as [outer, extent, inner] and reduced along extent. Threads split
// outer (or inner when outer is small); partial sums run in f32 over short
// runs, which the compiler vectorizes, and are carried in double across runs,
// so the result keeps the generic kernel's accuracy. f16 and bf16 elements
// are widened as they are read and rounded once when the result is stored.
#include "cpu/reduce_block.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

// Elements summed in f32 before the partial sum moves into double.
constexpr int64_t kRun = 256;

float combine(BlockReduction r, float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return r == BlockReduction::max ? std::max(a, b) : std::min(a, b);
}

float init(BlockReduction r) {
  return r == BlockReduction::max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
}

bool is_sum(BlockReduction r) { return r == BlockReduction::sum || r == BlockReduction::mean; }

// One contiguous row of n values (inner == 1).
template <class S>
float reduce_row(BlockReduction r, const S* x, int64_t n) {
  if (is_sum(r)) {
    double total = 0;
    for (int64_t b = 0; b < n; b += kRun) {
      float part[8] = {};
      int64_t e = std::min(n, b + kRun), i = b;
      for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; ++k) part[k] += Num<S>::load(x[i + k]);
      float tail = 0;
      for (; i < e; ++i) tail += Num<S>::load(x[i]);
      double run = tail;
      for (float p : part) run += p;
      total += run;
    }
    return float(r == BlockReduction::mean ? total / double(n) : total);
  }
  float acc = init(r);
  for (int64_t i = 0; i < n; ++i) acc = combine(r, acc, Num<S>::load(x[i]));
  return acc;
}

// Columns [c0, c1) of an [extent, inner] block: y[c] = reduce over e of x[e, c].
template <class S>
void reduce_columns(BlockReduction r, const S* x, S* y, int64_t extent, int64_t inner, int64_t c0, int64_t c1) {
  const int64_t w = c1 - c0;
  if (is_sum(r)) {
    std::vector<double> total(size_t(w), 0.0);
    std::vector<float> part(static_cast<size_t>(w));
    for (int64_t b = 0; b < extent; b += kRun) {
      std::fill(part.begin(), part.end(), 0.f);
      for (int64_t e = b, end = std::min(extent, b + kRun); e < end; ++e) {
        const S* row = x + e * inner + c0;
        for (int64_t c = 0; c < w; ++c) part[size_t(c)] += Num<S>::load(row[c]);
      }
      for (int64_t c = 0; c < w; ++c) total[size_t(c)] += part[size_t(c)];
    }
    for (int64_t c = 0; c < w; ++c)
      y[c0 + c] = Num<S>::store(float(r == BlockReduction::mean ? total[size_t(c)] / double(extent) : total[size_t(c)]));
    return;
  }
  std::vector<float> acc(size_t(w), init(r));
  for (int64_t e = 0; e < extent; ++e) {
    const S* row = x + e * inner + c0;
    for (int64_t c = 0; c < w; ++c) acc[size_t(c)] = combine(r, acc[size_t(c)], Num<S>::load(row[c]));
  }
  for (int64_t c = 0; c < w; ++c) y[c0 + c] = Num<S>::store(acc[size_t(c)]);
}

}  // namespace

std::optional<BlockShape> block_shape(const Shape& in, const std::vector<bool>& reduced) {
  // Merge neighbouring dims of the same kind, skipping extents of 1.
  std::vector<std::pair<int64_t, bool>> runs;
  if (std::find(in.begin(), in.end(), 0) != in.end()) return std::nullopt;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!runs.empty() && runs.back().second == reduced[d]) runs.back().first *= in[d];
    else runs.push_back({in[d], reduced[d]});
  }
  BlockShape s;
  size_t i = 0;
  if (i < runs.size() && !runs[i].second) s.outer = runs[i++].first;
  if (i < runs.size() && runs[i].second) s.extent = runs[i++].first;
  if (i < runs.size() && !runs[i].second) s.inner = runs[i++].first;
  if (i != runs.size()) return std::nullopt;
  return s;
}

namespace {

int64_t round_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

template <class S>
void reduce_block_typed(BlockReduction r, const BlockShape& s, const S* x, S* y) {
  const int64_t slab = s.extent * s.inner;
  if (s.inner == 1) {
#pragma omp parallel for schedule(static) if (s.outer * s.extent >= (int64_t(1) << 15))
    for (int64_t o = 0; o < s.outer; ++o) y[o] = Num<S>::store(reduce_row(r, x + o * slab, s.extent));
    return;
  }
  // Each thread walks whole rows of its columns, so the input streams
  // through once: columns are split only as far as the threads need work.
  // Fixed chunks of 64 read every row in 256-byte pieces: the int8
  // detector's head mean (f32[4,128,128,128] nhwc, one thread) took 5.0 ms
  // that way against 3.4-3.8 ms streaming. At most kMaxCols a chunk keep
  // the partial sums in L1.
  constexpr int64_t kMaxCols = 2048;
  const bool parallel = s.outer * slab >= (int64_t(1) << 15);
  const int64_t threads = parallel ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t splits = std::max<int64_t>(1, (threads + s.outer - 1) / s.outer);
  const int64_t cols = std::min(kMaxCols, round_up((s.inner + splits - 1) / splits, 16));
  const int64_t chunks = (s.inner + cols - 1) / cols;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t k = 0; k < chunks; ++k)
      reduce_columns(r, x + o * slab, y + o * s.inner, s.extent, s.inner, k * cols,
                     std::min(s.inner, (k + 1) * cols));
}

}  // namespace

bool reduce_block_supports(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

void reduce_block(BlockReduction r, const BlockShape& s, DType t, const void* x, void* y) {
  switch (t) {
    case DType::f32:
      return reduce_block_typed(r, s, static_cast<const float*>(x), static_cast<float*>(y));
    case DType::f16:
      return reduce_block_typed(r, s, static_cast<const F16*>(x), static_cast<F16*>(y));
    case DType::bf16:
      return reduce_block_typed(r, s, static_cast<const BF16*>(x), static_cast<BF16*>(y));
    default:
      throw Error::unsupported("block reduction of " + std::string(dtype_name(t)));
  }
}

}  // namespace tandem::cpu
