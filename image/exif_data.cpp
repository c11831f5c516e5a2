#include "image/exif_data.h"

#include <algorithm>
#include <cstring>

namespace tandem::image {

namespace {
constexpr uint8_t kExifHeader[6] = {'E', 'x', 'i', 'f', 0, 0};
constexpr size_t kMaxExifPayload = 0xfffe;  // an APP1 segment's limit
}  // namespace

bool has_exif_header(std::span<const uint8_t> payload) {
  return payload.size() >= sizeof kExifHeader && std::memcmp(payload.data(), kExifHeader, sizeof kExifHeader) == 0;
}

ExifDataPtr load_exif(std::span<const uint8_t> payload) {
  if (!has_exif_header(payload)) return nullptr;
  ExifDataPtr data(exif_data_new());
  if (!data) return nullptr;
  exif_data_unset_option(data.get(), EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS);
  exif_data_unset_option(data.get(), EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
  const size_t size = std::min(payload.size(), kMaxExifPayload);
  exif_data_load_data(data.get(), payload.data(), static_cast<unsigned int>(size));
  return data;
}

std::vector<uint8_t> with_exif_header(std::span<const uint8_t> tiff) {
  // Only what load_exif reads of it.
  const size_t size = std::min(tiff.size(), kMaxExifPayload - sizeof kExifHeader);
  std::vector<uint8_t> payload(sizeof kExifHeader + size);
  std::memcpy(payload.data(), kExifHeader, sizeof kExifHeader);
  if (size > 0) std::memcpy(payload.data() + sizeof kExifHeader, tiff.data(), size);
  return payload;
}

std::vector<uint8_t> exif_payload_of(std::span<const uint8_t> block) {
  return has_exif_header(block) ? std::vector<uint8_t>(block.begin(), block.end()) : with_exif_header(block);
}

}  // namespace tandem::image
