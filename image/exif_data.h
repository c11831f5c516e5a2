#pragma once
// libexif's parse of an EXIF block, shared by the readers of one tag
// (exif_orientation.h) and of many (photo_metadata.h). Untrusted bytes:
// nothing here throws or reads out of bounds.
#include <libexif/exif-data.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tandem::image {

struct ExifDataUnref {
  void operator()(ExifData* d) const { exif_data_unref(d); }
};
using ExifDataPtr = std::unique_ptr<ExifData, ExifDataUnref>;

// Whether `payload` starts with APP1's "Exif\0\0" header.
bool has_exif_header(std::span<const uint8_t> payload);

// The parse of an APP1 Exif payload ("Exif\0\0" + TIFF data, at most an
// APP1 segment's 0xfffe bytes of it read), every tag kept as written (none
// dropped as unknown, none added as the specification requires); null
// without the header or when libexif cannot allocate.
ExifDataPtr load_exif(std::span<const uint8_t> payload);

// Bare TIFF-structured EXIF data ("II*\0..." or "MM\0*...", as PNG's eXIf
// holds it) behind the header libexif needs.
std::vector<uint8_t> with_exif_header(std::span<const uint8_t> tiff);

// An EXIF block as a container's metadata item holds it (WebP's EXIF chunk,
// HEIF's Exif item, PNG's eXIf: bare TIFF data, or with the "Exif\0\0"
// header that some writers keep) as an APP1 payload.
std::vector<uint8_t> exif_payload_of(std::span<const uint8_t> block);

}  // namespace tandem::image
