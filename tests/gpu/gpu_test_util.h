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
#include <vector>

#include "core/half.h"
#include "cuda/context.h"
#include "graph/session.h"
#include "tests/tensor_compare.h"

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

// f32 values rounded to f16 or bf16 (to nearest even), as a tensor of that
// dtype.
inline Tensor to_low(const Tensor& t, DType low) {
  Tensor h = Tensor::empty(low, t.shape());
  auto* p = static_cast<uint16_t*>(h.raw());
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = low == DType::f16 ? float_to_f16(t.data<float>()[i]) : float_to_bf16(t.data<float>()[i]);
  return h;
}

// An f16 or bf16 tensor widened to f32 (exact).
inline Tensor to_f32(const Tensor& h) {
  Tensor t = Tensor::empty(DType::f32, h.shape());
  const auto* p = static_cast<const uint16_t*>(h.raw());
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = h.dtype() == DType::f16 ? f16_to_float(p[i]) : bf16_to_float(p[i]);
  return t;
}

// The dtype a graph lowered to `p` computes in (f32 for fp32 and tf32).
inline DType storage_dtype(Precision p) {
  return p == Precision::fp16 ? DType::f16 : p == Precision::bf16 ? DType::bf16 : DType::f32;
}

// Random f32 values exactly representable in the storage dtype of `p`: a
// graph lowered to f16 or bf16 then sees the very values its f32 CPU
// reference sees, and the comparison measures only the arithmetic.
inline Tensor random_for(Precision p, const Shape& s, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  Tensor t = random_f32(s, seed, lo, hi);
  DType d = storage_dtype(p);
  return d == DType::f32 ? t : to_f32(to_low(t, d));
}

// Relative error allowed against the f32 CPU reference: fp32 1e-5,
// fp16 and bf16 1e-2.
inline double tolerance(Precision p) { return p == Precision::fp32 ? 1e-5 : 1e-2; }

inline const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

// A tandem.FusedConv epilogue (ops/conv.h): activation and parameters
// (ops/activation.h), and whether a residual is added.
struct FusedEpilogue {
  std::string activation;
  std::vector<float> params;
  bool residual = false;
};

// Every FusedConv activation, a few with a residual: the epilogues each CUDA
// convolution path is checked with.
inline std::vector<FusedEpilogue> fused_conv_epilogues() {
  return {{"", {}, false},
          {"Relu", {}, false},
          {"Relu", {}, true},
          {"", {}, true},
          {"HardSwish", {0.99976f}, false},
          {"HardSwish", {0.99976f}, true},
          {"HardSigmoid", {0.2f, 0.5f, 0.99976f}, false},
          {"SiLU", {}, false},
          {"Clip", {0.f, 6.f}, false},
          {"LeakyRelu", {0.1f}, true},
          {"Sigmoid", {}, false},
          {"Tanh", {}, false}};
}

// Sets a FusedConv node's epilogue attributes, replacing earlier ones.
inline void set_fused_epilogue(Attributes& a, const FusedEpilogue& e) {
  a.set("activation", e.activation);
  if (!e.params.empty()) a.set("activation_params", e.params);
  else a.erase("activation_params");
  a.set("has_residual", int64_t(e.residual));
}

// The same graph run on the CPU in f32 and on cuda:0 at `gpu_precision`
// (fp16/bf16 lower the graph, graph/precision.cpp; inputs and outputs stay
// f32). `strict`: a node the CUDA backend refuses fails the run instead of
// falling back to the CPU, for tests of one kernel.
inline std::pair<std::vector<Tensor>, std::vector<Tensor>> run_both(const Graph& g, const std::vector<Tensor>& in,
                                                                    Precision gpu_precision = Precision::fp32,
                                                                    bool strict = false) {
  SessionOptions cpu, gpu;
  gpu.device = Device::cuda(0);
  gpu.precision = gpu_precision;
  gpu.strict_device = strict;
  return {Session(g, cpu).run(in), Session(g, gpu).run(in)};
}

}  // namespace tandem::testing
