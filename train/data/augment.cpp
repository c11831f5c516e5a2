#include "train/data/augment.h"

#include "train/data/seeding.h"

namespace tandem::train {

AugmentChoice augment_choice(const Augmentation& a, uint64_t seed) {
  SplitMix64 rng(seed);
  AugmentChoice c;
  if (a.crop_padding > 0) {
    c.dy = int64_t(rng.below(uint64_t(2 * a.crop_padding + 1)));
    c.dx = int64_t(rng.below(uint64_t(2 * a.crop_padding + 1)));
  }
  if (a.horizontal_flip) c.flip = rng.below(2) == 1;
  return c;
}

void augment_image(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                   const Augmentation& a, uint64_t seed) {
  AugmentChoice c = augment_choice(a, seed);
  for (int64_t ch = 0; ch < channels; ++ch) {
    const float* plane = src + ch * height * width;
    for (int64_t y = 0; y < height; ++y) {
      int64_t sy = y + c.dy - a.crop_padding;
      float* row = dst + (ch * height + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        int64_t sx = (c.flip ? width - 1 - x : x) + c.dx - a.crop_padding;
        bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        row[x] = inside ? plane[sy * width + sx] : a.fill;
      }
    }
  }
}

}  // namespace tandem::train
