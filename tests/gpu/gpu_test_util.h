#pragma once
// GPU tests compare the CUDA backend with the CPU backend (itself checked
// against ONNX's conformance data and PyTorch) on fresh random inputs. Every
// test skips, with a message, where there is no GPU; ctest reports those as
// skipped (tests/gpu/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cuda/context.h"
#include "graph/session.h"

namespace tandem::testing {

#define TANDEM_REQUIRE_GPU()                                          \
  do {                                                                \
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA GPU here"; \
  } while (0)

inline Tensor random_f32(const Shape& s, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// ||a - b|| / ||b|| over all elements, in double.
inline double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    double d = double(a.data<float>()[i]) - double(b.data<float>()[i]);
    num += d * d;
    den += double(b.data<float>()[i]) * double(b.data<float>()[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Exact agreement of any dtype (bool masks, integer casts, data movement).
inline void expect_identical(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  EXPECT_EQ(std::memcmp(gpu.raw(), cpu.raw(), cpu.bytes()), 0) << what;
}

// The same graph run on the CPU and on cuda:0.
inline std::pair<std::vector<Tensor>, std::vector<Tensor>> run_both(const Graph& g, const std::vector<Tensor>& in) {
  SessionOptions cpu, gpu;
  gpu.device = Device::cuda(0);
  return {Session(g, cpu).run(in), Session(g, gpu).run(in)};
}

}  // namespace tandem::testing
