#pragma once
// The EXIF Orientation tag (TIFF tag 0x0112 in IFD0), read with libexif from
// the one APP1 segment that holds it: a phone stores a portrait photo as a
// landscape sensor image plus "rotate 90 to view", and a viewer shows it
// upright. Every function here takes untrusted bytes and never throws or
// reads out of bounds; anything absent, malformed or out of range is 1
// (as stored, no transform), which is also what PIL's exif_transpose does.
#include <cstdint>
#include <span>

namespace tandem::image {

// The payload of the first APP1 segment that starts with "Exif\0\0" (the
// header included, without the marker and length), found by walking the
// JPEG's marker segments up to the first SOS; empty when there is none or
// the segment is cut short. Entropy-coded data is never scanned.
std::span<const uint8_t> find_jpeg_exif(std::span<const uint8_t> jpeg);

// Orientation 1..8 from an APP1 Exif payload ("Exif\0\0" + TIFF data).
int orientation_from_exif(std::span<const uint8_t> exif_payload);

// Orientation 1..8 from bare TIFF-structured EXIF data ("II*\0..." or
// "MM\0*..."), as PNG's eXIf chunk holds it.
int orientation_from_tiff(std::span<const uint8_t> tiff);

// Orientation 1..8 from an EXIF block as a container's metadata item holds
// it (WebP's EXIF chunk, HEIF's Exif item): bare TIFF data as the formats
// specify, or with the "Exif\0\0" header that some writers (PIL among them)
// keep.
int orientation_from_exif_block(std::span<const uint8_t> block);

// orientation_from_exif(find_jpeg_exif(jpeg)).
int read_jpeg_orientation(std::span<const uint8_t> jpeg);

}  // namespace tandem::image
