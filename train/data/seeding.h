#pragma once
// Counter-based randomness for data loading: every random choice (an epoch's
// order, a sample's crop and flip) comes from a generator seeded by what it
// is for (seed, epoch, sample), never from shared state, so results do not
// depend on which thread made them or in what order.
#include <cstdint>

namespace tandem::train {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, full-period, and its streams
// from nearby seeds are uncorrelated.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, n) by Lemire's multiply-shift (bias below 2^-40 for n < 2^24).
  uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next() * n >> 64); }

 private:
  uint64_t state_;
};

// One seed from several values, each folded through the generator.
inline uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t s = SplitMix64(a).next();
  s = SplitMix64(s ^ b).next();
  return SplitMix64(s ^ c).next();
}

}  // namespace tandem::train
