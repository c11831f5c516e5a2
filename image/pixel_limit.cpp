#include "image/pixel_limit.h"

#include <string>

#include "core/error.h"

namespace tandem::image {

void check_pixel_limit(std::string_view format, int64_t width, int64_t height,
                       const DecodeOptions& opt, std::string_view name) {
  const int64_t pixels = width * height;  // both come from 32-bit header fields
  if (pixels <= opt.max_pixels) return;
  throw Error(std::string(format) + " is " + std::to_string(width) + "x" + std::to_string(height) +
                  " = " + std::to_string(pixels) + " pixels, over the limit of " +
                  std::to_string(opt.max_pixels) +
                  " (a decompression bomb or a very large image; raise DecodeOptions::max_pixels)",
              ErrorContext{std::string(name), {}, {}, {}});
}

}  // namespace tandem::image
