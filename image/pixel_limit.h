#pragma once
// The decompression-bomb guard every decoder applies to the size a file's
// header claims, before it allocates a pixel buffer.
#include <cstdint>
#include <string_view>

#include "image/image.h"

namespace tandem::image {

// Throws tandem::Error naming `name` when width * height is over
// opt.max_pixels; `format` ("JPEG", "PNG", ...) starts the message.
void check_pixel_limit(std::string_view format, int64_t width, int64_t height,
                       const DecodeOptions& opt, std::string_view name);

}  // namespace tandem::image
