#pragma once
// tandem_backend_ops: one table of op cases run on every backend, dtype and
// layout a kernel takes, each compared with a float64 reference (in the
// spirit of ggml's test-backend-ops). Shared pieces: the error measure, the
// tolerances, fixed-seed inputs and the tally the summary prints.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::backend_ops {

// Normalized mean squared error, sum((out - ref)^2) / sum(ref^2): one number
// per output whatever its size or scale (ggml's measure). NaN or an
// infinity in `out` where `ref` is finite gives infinity.
double nmse(const Tensor& out, const Tensor& ref);

// The largest NMSE allowed for an output stored in `dtype`, whatever the
// backend or op: f32 1e-10 (a relative error of 1e-5 of the reference's
// norm, the bound the per-op GPU tests held every fp32 kernel to); f16
// 1e-5 and bf16 1e-4 (rounding the output alone costs a relative 2^-11 and
// 2^-8 per element, an NMSE of at most 2.4e-7 and 1.5e-5; a kernel that
// accumulates in float adds little). Measured on the CPU: f32 at most
// 2e-13, f16 1e-7, bf16 7e-6.
double forward_tolerance(DType dtype);
// Gradients against central differences of an f32 forward: the quotient
// carries the forward's rounding divided by the step, so f32 allows 1e-7
// (measured: at most 1e-8 on the CPU); a 16-bit backward adds its own
// rounding of dy and dx, so f16 1e-4 and bf16 1e-3.
double gradient_tolerance(DType dtype);

// Every element of a tensor (any dtype, plain layout, on the host) as double.
std::vector<double> widen(const Tensor& t);
// A host f32 tensor's values rounded to `dtype` (f32, f16 or bf16).
Tensor narrow(const Tensor& f32, DType dtype);
// A host tensor converted to f32 (exact from f16 and bf16).
Tensor to_f32(const Tensor& t);
// A host f64 tensor from values.
Tensor f64_tensor(const Shape& shape, std::vector<double> values);

// Consecutive seeds, one per call: a case table draws one per input, in
// the order it lists them.
struct Seeds {
  uint64_t next;
  uint64_t operator()() { return next++; }
};

// Uniform values in [lo, hi) from a fixed seed.
Tensor uniform(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f);
// Distinct values, exactly representable in bf16 (multiples of 1/4 in
// [-32, 32)), shuffled with a fixed seed: for ops whose result depends on
// order (TopK, ArgMax, max pooling under finite differences).
Tensor distinct(const Shape& shape, uint64_t seed);
// Uniform values in [lo, hi) at least `gap` away from each of `kinks`
// (where a function's derivative jumps).
Tensor away_from(const Shape& shape, uint64_t seed, float lo, float hi, std::vector<float> kinks,
                 float gap);

// known: a failure listed in known_discrepancies.cpp, with its reason.
enum class Verdict { pass, fail, unsupported, known };

// The outcomes of one run, by backend, and the failures to print again at
// the end.
class Tally {
 public:
  void record(const std::string& backend, const std::string& what, Verdict v,
              const std::string& detail);
  // Marks a failure that is not one case's (a kernel without a case).
  void fail(const std::string& what);
  void print_summary() const;
  bool ok() const { return failures_.empty(); }

 private:
  struct Counts {
    int pass = 0, fail = 0, unsupported = 0, known = 0;
  };
  std::map<std::string, Counts> counts_;
  std::vector<std::string> failures_;
  bool verbose_ = false;

 public:
  void set_verbose(bool v) { verbose_ = v; }
};

}  // namespace tandem::backend_ops
