// WebP: the decoder (upright per its EXIF chunk) and the EXIF chunk alone.
#include "fuzz/image_target.h"
#include "image/webp_decoder.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  fuzz::decode_capped(bytes, image::decode_webp_into, "fuzz.webp");
  fuzz::rejecting_bad_input([&] { image::webp_exif_block(bytes); });
  return 0;
}
