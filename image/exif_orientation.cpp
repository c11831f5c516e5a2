#include "image/exif_orientation.h"

#include "image/exif_data.h"

namespace tandem::image {

namespace {

// Markers that stand alone, without a length: TEM, RST0-7 and a repeated SOI.
bool is_standalone_marker(uint8_t m) { return m == 0x01 || (m >= 0xD0 && m <= 0xD8); }

}  // namespace

std::span<const uint8_t> find_jpeg_exif(std::span<const uint8_t> jpeg) {
  const size_t n = jpeg.size();
  if (n < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return {};
  size_t pos = 2;
  while (pos < n) {
    if (jpeg[pos] != 0xFF) return {};  // not at a marker: corrupt headers, stop looking
    while (pos < n && jpeg[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= n) return {};
    const uint8_t marker = jpeg[pos++];
    if (marker == 0xDA || marker == 0xD9) return {};  // SOS or EOI: no headers follow
    if (is_standalone_marker(marker)) continue;
    if (marker == 0x00 || n - pos < 2) return {};
    const size_t length = size_t(jpeg[pos]) << 8 | jpeg[pos + 1];  // counts itself
    if (length < 2 || length > n - pos) return {};
    const std::span<const uint8_t> payload = jpeg.subspan(pos + 2, length - 2);
    if (marker == 0xE1 && has_exif_header(payload)) return payload;
    pos += length;
  }
  return {};
}

int orientation_from_exif(std::span<const uint8_t> exif_payload) {
  const ExifDataPtr data = load_exif(exif_payload);
  if (!data) return 1;
  const ExifEntry* e = exif_content_get_entry(data->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
  if (!e || !e->data || e->components != 1) return 1;
  const ExifByteOrder order = exif_data_get_byte_order(data.get());
  unsigned value = 0;
  if (e->format == EXIF_FORMAT_SHORT && e->size >= 2) value = exif_get_short(e->data, order);
  if (e->format == EXIF_FORMAT_LONG && e->size >= 4) value = exif_get_long(e->data, order);
  return value >= 1 && value <= 8 ? int(value) : 1;
}

int orientation_from_tiff(std::span<const uint8_t> tiff) { return orientation_from_exif(with_exif_header(tiff)); }

int orientation_from_exif_block(std::span<const uint8_t> block) {
  return orientation_from_exif(exif_payload_of(block));
}

int read_jpeg_orientation(std::span<const uint8_t> jpeg) {
  return orientation_from_exif(find_jpeg_exif(jpeg));
}

}  // namespace tandem::image
