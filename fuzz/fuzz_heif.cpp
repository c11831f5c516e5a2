// HEIF (HEIC, AVIF): libheif's container parsing and decode as tandem drives
// it (upright per irot/imir/clap), and the EXIF block it pulls out.
#include "fuzz/image_target.h"
#include "image/heif_decoder.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  fuzz::decode_capped(bytes, image::decode_heif_into, "fuzz.heic");
  fuzz::rejecting_bad_input([&] { image::heif_exif_block(bytes); });
  return 0;
}
