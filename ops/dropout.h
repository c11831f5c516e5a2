#pragma once
// Dropout's keep mask as a pure function of (seed, element index): element i
// is kept when a counter-based hash of (seed, i) lands at or above p, so the
// mask depends on nothing else (thread count, device, earlier calls). The CPU
// loop (cpu/eltwise.cpp) and the CUDA kernel (cuda/dropout.cu)
// both call these, so their masks agree bit for bit.
#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tandem::ops {

struct DropoutParams {
  float p = 0.5f;      // probability of zeroing an element, in [0, 1)
  uint64_t seed = 0;   // the mask is a function of (seed, element index) only
};

// splitmix64's finalizer.
TANDEM_HOST_DEVICE inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// What the per-element test compares against: keep when the top 24 bits of
// the hash, as a fraction, are >= p.
struct DropoutMask {
  uint64_t base;       // the seed, mixed
  uint64_t threshold;  // ceil(p * 2^24)

  static DropoutMask of(float p, uint64_t seed) {
    return {splitmix64_mix(seed), uint64_t(std::ceil(double(p) * double(1 << 24)))};
  }
  TANDEM_HOST_DEVICE bool keep(int64_t i) const {
    return (splitmix64_mix(base + uint64_t(i + 1) * 0x9e3779b97f4a7c15ULL) >> 40) >= threshold;
  }
};

}  // namespace tandem::ops
