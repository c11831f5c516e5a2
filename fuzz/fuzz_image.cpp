// Any file from a photo folder: the sniffer decides JPEG, PNG, WebP or HEIF
// by the first bytes and the matching decoder runs, as `tandem tag` does
// with a classifier's input size; then the EXIF metadata is read from the
// same bytes.
#include "fuzz/fuzz_util.h"
#include "image/decode.h"
#include "image/photo_metadata.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = fuzz::as_span(data, size);
  image::sniff_format(bytes.first(std::min(bytes.size(), image::kSniffBytes)));
  image::DecodeOptions o;
  o.max_pixels = fuzz::kMaxPixels;
  o.min_width = o.min_height = 224;
  image::Image img;
  fuzz::rejecting_bad_input([&] { image::decode_image_into(img, bytes, o, "fuzz.img"); });
  fuzz::rejecting_bad_input([&] { image::read_photo_metadata(bytes); });
  return 0;
}
