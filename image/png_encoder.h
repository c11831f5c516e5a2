#pragma once
// PNG encoding through libpng, for thumbnails: 8-bit RGB (or gray) with
// tEXt key/value chunks, as the freedesktop thumbnail standard stores its
// Thumb::URI and Thumb::MTime keys.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "image/image.h"

namespace tandem::image {

// The PNG file of `img` (1 or 3 channels) with `text` as tEXt chunks
// (Latin-1 keys of 1..79 characters, as PNG requires). zlib level
// `compression` (0..9): small thumbnails gain little from more than 3.
// Throws tandem::Error on an empty image, a bad key or a libpng failure.
std::vector<uint8_t> encode_png(const Image& img, const std::vector<std::pair<std::string, std::string>>& text = {},
                                int compression = 3);

}  // namespace tandem::image
