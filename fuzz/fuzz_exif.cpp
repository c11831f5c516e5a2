// EXIF as tandem reads it: the Orientation tag found in a JPEG's APP1 (its
// own marker walk), the same from a bare EXIF block or TIFF header, and the
// camera metadata (date, camera, exposure, GPS) through libexif.
#include "fuzz/fuzz_util.h"
#include "image/exif_orientation.h"
#include "image/photo_metadata.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = fuzz::as_span(data, size);
  fuzz::rejecting_bad_input([&] {
    image::read_jpeg_orientation(bytes);
    const auto exif = image::find_jpeg_exif(bytes);
    image::orientation_from_exif(exif);
    image::metadata_from_exif(exif);
  });
  fuzz::rejecting_bad_input([&] { image::orientation_from_exif_block(bytes); });
  fuzz::rejecting_bad_input([&] { image::orientation_from_tiff(bytes); });
  fuzz::rejecting_bad_input([&] { image::metadata_from_exif(bytes); });
  return 0;
}
