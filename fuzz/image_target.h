#pragma once
// One decode of a fuzz input as tandem's decoders run it, under the fuzzing
// pixel limit: shared by the per-format image targets.
#include "fuzz/fuzz_util.h"
#include "image/image.h"

namespace tandem::fuzz {

// `decode_into` is one of image::decode_*_into; `upright` applies the
// file's orientation (EXIF or the container's transformations).
template <typename DecodeInto>
void decode_capped(std::span<const uint8_t> bytes, DecodeInto decode_into, const char* name, bool upright = true) {
  image::DecodeOptions o;
  o.max_pixels = kMaxPixels;
  o.apply_orientation = upright;
  image::Image img;
  rejecting_bad_input([&] { decode_into(img, bytes, o, name); });
}

}  // namespace tandem::fuzz
