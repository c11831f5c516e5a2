#pragma once
// WebP decoding through libwebp to 8-bit RGB, matching PIL's
// Image.open(p).convert("RGB"): lossy and lossless, alpha dropped (not
// composited, as for PNG), an animation's first frame as shown on its
// canvas. With DecodeOptions::apply_orientation the EXIF orientation in an
// EXIF chunk is applied, as PIL's exif_transpose does.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "image/image.h"

namespace tandem::image {

// Throws tandem::Error naming `name` on a malformed or truncated file, or
// one whose canvas is over opt.max_pixels (checked from the header before
// any pixel buffer is allocated). min_width/min_height are ignored: libwebp
// scales by resampling after decoding, which saves nothing.
void decode_webp_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                      std::string_view name = "<memory>");

// The file's EXIF chunk as stored (bare TIFF data, or with the "Exif\0\0"
// header some writers keep); empty when there is none or the container
// cannot be parsed. Never throws.
std::vector<uint8_t> webp_exif_block(std::span<const uint8_t> bytes);

}  // namespace tandem::image
