#pragma once
// What a camera writes about a photo in its EXIF block: when it was taken,
// with which camera and lens, how it was exposed, and where (GPS). Read with
// libexif from the bytes the decoders already hold (no second read), for
// the catalog and the gallery. Like exif_orientation.h, every function takes
// untrusted bytes, never throws, and leaves out what is absent, malformed
// or out of range (a date in month 13, a latitude of 300 degrees): a value
// is either plausible or missing.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tandem::image {

struct PhotoMetadata {
  // DateTimeOriginal (else DateTimeDigitized, else DateTime) as
  // "YYYY-MM-DDTHH:MM:SS", local time as the camera clock showed it.
  std::string taken_at;
  // The matching OffsetTime* tag ("+02:00"), empty when the camera wrote
  // none: most older cameras do not know their time zone.
  std::string taken_offset;
  std::string make, model, lens;
  std::optional<double> exposure_s;  // ExposureTime, seconds
  std::optional<double> f_number;
  std::optional<int> iso;              // PhotographicSensitivity (ISOSpeedRatings)
  std::optional<double> focal_length_mm;
  // WGS-84 degrees, south and west negative; altitude in metres above sea
  // level (negative below).
  std::optional<double> latitude, longitude, altitude_m;

  bool empty() const {
    return taken_at.empty() && make.empty() && model.empty() && lens.empty() && !exposure_s && !f_number && !iso &&
           !focal_length_mm && !latitude && !longitude && !altitude_m;
  }
};

// From an APP1 Exif payload ("Exif\0\0" + TIFF data).
PhotoMetadata metadata_from_exif(std::span<const uint8_t> exif_payload);

// From a JPEG's first Exif APP1 segment, a WebP's EXIF chunk or a HEIF's
// Exif item (the container is read, no pixel decoded); empty for PNG and
// files without EXIF.
PhotoMetadata read_photo_metadata(std::span<const uint8_t> file_bytes);

}  // namespace tandem::image
