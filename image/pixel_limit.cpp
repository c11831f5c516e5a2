#include "image/pixel_limit.h"

#include <string>

#include "core/error.h"

namespace tandem::image {

void check_pixel_limit(std::string_view format, int64_t width, int64_t height,
                       const DecodeOptions& opt, std::string_view name) {
  const ErrorContext ctx{std::string(name), {}, {}, {}};
  if (width < 0 || height < 0)
    throw Error(std::string(format) + " header claims a size of " + std::to_string(width) + "x" +
                    std::to_string(height),
                ctx);
  // Divided rather than multiplied: PNG and HEIF extents reach 2^32 - 1,
  // whose product int64 does not hold.
  if (height == 0 || width <= opt.max_pixels / height) return;
  const auto pixels = static_cast<unsigned __int128>(width) * static_cast<unsigned __int128>(height);
  throw Error(std::string(format) + " is " + std::to_string(width) + "x" + std::to_string(height) + " = " +
                  (pixels >> 64 ? std::string("over 2^64") : std::to_string(uint64_t(pixels))) +
                  " pixels, over the limit of " + std::to_string(opt.max_pixels) +
                  " (a decompression bomb or a very large image; raise DecodeOptions::max_pixels)",
              ctx);
}

}  // namespace tandem::image
