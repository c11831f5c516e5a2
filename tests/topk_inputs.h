#pragma once
// Inputs that exercise a selection's order: distinct values (no ties) and
// few values (ties everywhere), from a fixed seed. For TopK in
// tests/backend_ops and tests/gpu.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "core/tensor.h"

namespace tandem::testing {

// A shuffled 0..n-1, centred and scaled by 1/1024 (exact in f32).
inline Tensor shuffled_values(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::vector<int64_t> perm(size_t(t.numel()));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = float(perm[size_t(i)] - t.numel() / 2) / 1024.f;
  return t;
}

// Multiples of 1/4 below `levels` / 4, so most elements tie with others
// (as in a peak-suppressed heatmap).
inline Tensor tied_values(const Shape& s, uint64_t seed, int levels = 5) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, levels - 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(u(rng)) * 0.25f;
  return t;
}

}  // namespace tandem::testing
