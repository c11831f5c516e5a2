// JPEG decoding as tag, detect and the face stage use it: whole at 1/1
// (pixels as stored, libjpeg's warnings accepted), DCT-scaled to 1/2, 1/4
// with the progressive refinement scans cut, 1/8 with the AC scans cut, and
// two face regions decoded in one pass; plus the scan cutter on its own.
#include <algorithm>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "image/jpeg_decoder.h"
#include "image/jpeg_scans.h"
#include "image/region_decode.h"

using namespace tandem;
using namespace tandem::image;

namespace {

void decode_scaled(std::span<const uint8_t> bytes, const JpegInfo& info, int denom, DecodeOptions o) {
  o.max_pixels = fuzz::kMaxPixels;
  o.min_width = std::max(1, info.width / denom);
  o.min_height = std::max(1, info.height / denom);
  Image img;
  fuzz::rejecting_bad_input([&] { decode_jpeg_into(img, bytes, o, "fuzz.jpg"); });
}

void decode_face_regions(std::span<const uint8_t> bytes, const JpegInfo& info) {
  DecodeOptions o;
  o.max_pixels = fuzz::kMaxPixels;
  const int w = info.width, h = info.height;
  const PixelRect regions[] = {{w / 8, h / 6, std::max(1, w / 5), std::max(1, h / 4)},
                               {w / 2, h / 3, std::max(1, w / 6), std::max(1, h / 5)}};
  Image img;
  double scale = 0;
  PixelRect origin;
  fuzz::rejecting_bad_input([&] {
    decode_region_into(img, bytes, regions[0], std::max(1, w / 16), o, "fuzz.jpg", &scale, &origin);
  });
  // As tag's face stage decodes them: progressive files without luma's
  // refinement scans.
  DecodeOptions coarse = o;
  coarse.coarse_progressive = true;
  fuzz::rejecting_bad_input([&] {
    decode_regions_into(img, bytes, regions, std::max(1, w / 24), coarse, "fuzz.jpg", &scale, &origin);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = fuzz::as_span(data, size);
  std::vector<uint8_t> cut;
  copy_scans(bytes, cut, ScanCut::eighth);
  copy_scans(bytes, cut, ScanCut::luma_coarse);

  JpegInfo info;
  try {
    info = read_jpeg_info(bytes, "fuzz.jpg");
  } catch (const tandem::Error&) {
    return 0;
  }
  if (int64_t(info.width) * info.height > fuzz::kMaxPixels) return 0;  // refused before any decoding
  DecodeOptions as_stored;
  as_stored.apply_orientation = false;
  as_stored.accept_jpeg_warnings = true;
  decode_scaled(bytes, info, 1, as_stored);
  decode_scaled(bytes, info, 2, {});
  DecodeOptions coarse;
  coarse.coarse_progressive = true;
  decode_scaled(bytes, info, 4, coarse);
  DecodeOptions eighth;
  eighth.accept_jpeg_warnings = true;
  decode_scaled(bytes, info, 8, eighth);
  decode_face_regions(bytes, info);
  return 0;
}
