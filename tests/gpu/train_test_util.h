#pragma once
// The CUDA training table (cuda/train_table.cpp) against the CPU's (cpu/train_table.cpp, itself
// checked against float64 finite differences and PyTorch) entry by entry, on
// the same random inputs uploaded to cuda:0. Tolerances, as relative error
// over the whole tensor (gpu_test_util.h's relative_error): 1e-4 for
// convolutions (cuDNN and oneDNN sum in different orders over up to C*KH*KW
// terms), 1e-5 elsewhere; fp32 without TF32 on both sides.
#include <cstring>
#include <string>

#include "ops/train_backend.h"
#include "cpu/train_table.h"
#include "cuda/train_table.h"
#include "cuda/transfer.h"
#include "gpu_test_util.h"

namespace tandem::testing {

constexpr double kConvTolerance = 1e-4;
constexpr double kTolerance = 1e-5;

inline const TrainBackend& cpu_table() { return cpu::cpu_train_backend(); }
inline const TrainBackend& gpu_table() { return cuda::cuda_train_backend(0); }

// A host tensor's copy on cuda:0 (undefined stays undefined).
inline Tensor up(const Tensor& t) { return t.defined() ? cuda::to_device(t, 0) : Tensor(); }
inline Tensor down(const Tensor& t) { return cuda::to_host(t); }

// One tensor on each side.
struct Pair {
  Tensor cpu, gpu;
};

// The same host values on both sides (the GPU's a copy).
inline Pair same(const Tensor& host) { return {host.clone(), up(host)}; }
inline Pair random_pair(const Shape& s, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  return same(random_f32(s, seed, lo, hi));
}
// Uninitialized outputs of one shape (f32 unless told).
inline Pair empty_pair(const Shape& s, DType t = DType::f32) {
  const TrainBackend& g = gpu_table();
  return {Tensor::empty(t, s), g.empty(g.ctx, t, s)};
}

// Where a backward writes one gradient, on both sides: an accumulating
// gradient starts from the same random values, an overwritten one from
// uninitialized memory.
struct GradPair {
  Pair t;
  GradMode mode;
  GradOut cpu() const { return {t.cpu, mode}; }
  GradOut gpu() const { return {t.gpu, mode}; }
};
inline GradPair grad_pair(const Shape& s, GradMode mode, uint32_t seed) {
  return {mode == GradMode::accumulate ? random_pair(s, seed) : empty_pair(s), mode};
}

inline const char* mode_name(GradMode m) { return m == GradMode::overwrite ? "overwrite" : "accumulate"; }

// ||gpu - cpu|| / ||cpu|| <= tol, the GPU tensor copied back first.
inline void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  Tensor g = down(gpu);
  ASSERT_EQ(g.shape(), cpu.shape()) << what;
  EXPECT_LE(relative_error(g, cpu), tol) << what;
}
inline void expect_close(const Pair& p, double tol, const std::string& what) { expect_close(p.gpu, p.cpu, tol, what); }

// Bit-for-bit equality of a GPU tensor with a host one.
inline void expect_same_bits(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  expect_identical(down(gpu), cpu, what);
}

}  // namespace tandem::testing
