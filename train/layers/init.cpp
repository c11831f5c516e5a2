#include "train/layers/init.h"

#include <cmath>

namespace tandem::train {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

void uniform_fill(const Tensor& t, double low, double high, Rng& rng) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = float(low + (high - low) * rng.uniform());
}

void default_init(const Tensor& t, int64_t fan_in, Rng& rng) {
  check(fan_in > 0, "initialization needs a positive fan-in");
  // gain sqrt(2 / (1 + a^2)) = sqrt(1/3) times sqrt(3 / fan_in).
  double bound = 1.0 / std::sqrt(double(fan_in));
  uniform_fill(t, -bound, bound, rng);
}

}  // namespace tandem::train
