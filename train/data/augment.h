#pragma once
// Training-time augmentation of one [C,H,W] image, torchvision-style:
// RandomCrop(size=(H,W), padding) then RandomHorizontalFlip(p=0.5). All
// random choices come from `seed` (see seeding.h), so a sample's result does
// not depend on the thread that made it.
#include <cstdint>

namespace tandem::train {

struct Augmentation {
  int64_t crop_padding = 0;      // 0: no crop
  bool horizontal_flip = false;
  float fill = 0;                // value of padded pixels (in the dataset's normalized units)

  bool active() const { return crop_padding > 0 || horizontal_flip; }
};

// The choices `seed` makes for an image of that padding.
struct AugmentChoice {
  int64_t dy = 0, dx = 0;  // crop offset into the padded image, in [0, 2 * padding]
  bool flip = false;
};
AugmentChoice augment_choice(const Augmentation& a, uint64_t seed);

// dst(c, y, x) = src(c, y + dy - padding, x' + dx - padding), x' = flip ? W-1-x : x,
// or `fill` where that falls outside src; distinct contiguous [C,H,W] buffers.
void augment_image(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                   const Augmentation& a, uint64_t seed);

}  // namespace tandem::train
