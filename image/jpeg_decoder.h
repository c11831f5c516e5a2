#pragma once
// JPEG decoding through libjpeg-turbo's TurboJPEG API, with DCT-domain
// scaling: a 4032x3024 photo needed at >= 256x256 is decoded at 1/8
// (504x378), which skips most of the IDCT, upsampling and color conversion.
// Thread-safe: each thread keeps its own tjhandle.
#include <cstdint>
#include <span>
#include <string_view>

#include "image/image.h"

namespace tandem::image {

struct JpegInfo {
  int width = 0;   // full-size pixels, as the header says
  int height = 0;
  int colorspace = 0;  // TJCS_*: RGB, YCbCr, GRAY, CMYK, YCCK
  int subsampling = 0;  // TJSAMP_*
};

// A DCT scaling factor num/denom and the output size it gives.
struct JpegScale {
  int num = 1;
  int denom = 1;
  int width = 0;   // ceil(full_width * num / denom), as libjpeg computes it
  int height = 0;
};

// Reads the header only. Throws tandem::Error naming `name` on anything that
// is not a readable JPEG header.
JpegInfo read_jpeg_info(std::span<const uint8_t> bytes, std::string_view name = "<memory>");

// The smallest factor <= 1 that libjpeg-turbo offers (1/8, 1/4, 3/8, 1/2,
// ..., 1) whose output is >= min_width x min_height; 1/1 when both minimums
// are 0 or when even full size does not cover them (never upscales).
JpegScale choose_jpeg_scale(int width, int height, int min_width, int min_height);

// Decodes into `out` (reusing its buffer): RGB for color JPEGs (YCbCr, RGB,
// CMYK/YCCK converted with PIL's formula), 1 channel for grayscale. With
// opt.apply_orientation the pixels come out upright per the EXIF Orientation
// tag (out.orientation says which transform was applied), and the DCT scale
// is chosen so the upright image covers opt.min_width x opt.min_height.
// Refuses images over opt.max_pixels (source size) and, unless
// opt.accept_jpeg_warnings, corrupt or truncated data.
void decode_jpeg_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                      std::string_view name = "<memory>");

Image decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                  std::string_view name = "<memory>");

// Shorthand for a DCT-scaled decode: decode_jpeg(bytes, {min_width, min_height}).
Image decode_jpeg(std::span<const uint8_t> bytes, int min_width, int min_height,
                  std::string_view name = "<memory>");

}  // namespace tandem::image
