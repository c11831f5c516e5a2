#pragma once
// A JPEG's header segments, from SOI to the first scan, for the readers
// that need headers only (the EXIF segment, the frame's kind): the
// entropy-coded data is never scanned. Untrusted bytes: never reads out of
// bounds.
#include <cstddef>
#include <cstdint>
#include <span>

namespace tandem::image {

// Markers without a length: TEM, RST0-7 and a repeated SOI.
inline bool is_standalone_jpeg_marker(uint8_t m) { return m == 0x01 || (m >= 0xD0 && m <= 0xD8); }

// Calls visit(marker, payload) for each marker after SOI up to the first
// SOS or EOI (neither visited): a standalone marker with an empty payload,
// any other with its segment's bytes after the length. Returns true as
// soon as visit does; false when the headers end first, are cut short or
// are no JPEG's (no SOI, bytes where a marker belongs, marker 0x00, a
// length that does not fit).
template <typename Visit>
bool walk_jpeg_headers(std::span<const uint8_t> jpeg, Visit&& visit) {
  const size_t n = jpeg.size();
  if (n < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return false;
  size_t pos = 2;
  while (pos < n) {
    if (jpeg[pos] != 0xFF) return false;
    while (pos < n && jpeg[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= n) return false;
    const uint8_t marker = jpeg[pos++];
    if (marker == 0xDA || marker == 0xD9 || marker == 0x00)
      return false;  // SOS, EOI: no headers follow
    if (is_standalone_jpeg_marker(marker)) {
      if (visit(marker, std::span<const uint8_t>())) return true;
      continue;
    }
    if (n - pos < 2) return false;
    const size_t length = size_t(jpeg[pos]) << 8 | jpeg[pos + 1];  // counts itself
    if (length < 2 || length > n - pos) return false;
    if (visit(marker, jpeg.subspan(pos + 2, length - 2))) return true;
    pos += length;
  }
  return false;
}

}  // namespace tandem::image
