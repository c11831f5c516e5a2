#pragma once
// PNG decoding through libpng to 8-bit gray (1 channel) or RGB (3 channels),
// matching PIL's Image.open(p).convert("RGB") for what torchvision feeds a
// classifier: palette -> RGB, 1/2/4-bit gray -> 8-bit, 16-bit -> high byte,
// alpha (channel or tRNS) dropped, gAMA ignored. With
// DecodeOptions::apply_orientation an EXIF orientation in an eXIf chunk
// before the image data is applied, as PIL's exif_transpose does.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "image/image.h"

namespace tandem::image {

// Throws tandem::Error naming `name` on a malformed, truncated or oversized
// (width * height > opt.max_pixels, checked before allocating) file.
// min_width/min_height are ignored: PNG has no cheap scaled decode.
void decode_png_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                     std::string_view name = "<memory>");

Image decode_png(std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                 std::string_view name = "<memory>");

// The tEXt/zTXt/iTXt key-value pairs before the image data (where a
// freedesktop thumbnail keeps Thumb::URI and Thumb::MTime), without
// decoding pixels. Throws tandem::Error naming `name` on a malformed file.
std::vector<std::pair<std::string, std::string>> read_png_text(std::span<const uint8_t> bytes,
                                                               std::string_view name = "<memory>");

}  // namespace tandem::image
