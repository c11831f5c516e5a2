#include "image/exif_orientation.h"

#include "image/exif_data.h"
#include "image/jpeg_markers.h"

namespace tandem::image {

std::span<const uint8_t> find_jpeg_exif(std::span<const uint8_t> jpeg) {
  std::span<const uint8_t> exif;
  walk_jpeg_headers(jpeg, [&](uint8_t marker, std::span<const uint8_t> payload) {
    if (marker == 0xE1 && has_exif_header(payload)) exif = payload;
    return !exif.empty();
  });
  return exif;
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
