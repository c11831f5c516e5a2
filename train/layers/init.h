#pragma once
// Seeded initialization, PyTorch's defaults (not its random streams: a
// model compared with PyTorch loads the same weights on both sides).
#include <cstdint>

#include "core/tensor.h"

namespace tandem::train {

// splitmix64: small, fast, and the same sequence on every platform (the
// standard library's distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, 1), 53 random bits.
  double uniform();

 private:
  uint64_t state_;
};

// Fills an f32 host tensor with U(low, high).
void uniform_fill(const Tensor& t, double low, double high, Rng& rng);
// Conv and linear weights: kaiming_uniform(a = sqrt(5)), which is
// U(±1 / sqrt(fan_in)); their biases use the same bound.
void default_init(const Tensor& t, int64_t fan_in, Rng& rng);

}  // namespace tandem::train
