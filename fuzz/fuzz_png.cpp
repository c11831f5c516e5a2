// PNG: the decoder (upright per an eXIf chunk, and as stored) and the text
// chunks tandem reads back from its own thumbnails (Thumb::URI, Thumb::MTime).
#include "fuzz/image_target.h"
#include "image/png_decoder.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  fuzz::decode_capped(bytes, image::decode_png_into, "fuzz.png");
  fuzz::decode_capped(bytes, image::decode_png_into, "fuzz.png", /*upright=*/false);
  fuzz::rejecting_bad_input([&] { image::read_png_text(bytes, "fuzz.png"); });
  return 0;
}
