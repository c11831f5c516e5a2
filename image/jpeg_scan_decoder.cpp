#include "image/jpeg_scan_decoder.h"

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "image/libjpeg_error.h"

namespace tandem::image {

namespace {


J_COLOR_SPACE color_space(int channels) {
  return channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
}

// The C part: false with e.message set on any failure. Keeps to plain data,
// as longjmp skips destructors.
bool decode(const uint8_t* data, size_t size, int scale_num, int scale_denom, uint8_t* dst,
            int width, int height, int channels, int pitch, LibjpegError& e) {
  jpeg_decompress_struct cinfo;
  use_libjpeg_error(cinfo, e);
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = unsigned(scale_num);
  cinfo.scale_denom = unsigned(scale_denom);
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_block_smoothing = FALSE;
  cinfo.out_color_space = color_space(channels);
  jpeg_start_decompress(&cinfo);
  if (int(cinfo.output_width) != width || int(cinfo.output_height) != height ||
      cinfo.output_components != channels) {
    std::snprintf(e.message, sizeof e.message, "%d/%d-scale decode gives %ux%ux%d, expected %dx%dx%d",
                  scale_num, scale_denom, cinfo.output_width, cinfo.output_height,
                  cinfo.output_components, width, height, channels);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW rows[16];
    const JDIMENSION n = std::min<JDIMENSION>(16, cinfo.output_height - cinfo.output_scanline);
    for (JDIMENSION k = 0; k < n; ++k)
      rows[k] = dst + size_t(cinfo.output_scanline + k) * size_t(pitch);
    jpeg_read_scanlines(&cinfo, rows, n);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

void decode_cut_scans(std::span<const uint8_t> cut, int scale_num, int scale_denom, uint8_t* dst,
                      int width, int height, int channels, int pitch, bool accept_warnings,
                      std::string_view name) {
  LibjpegError e;
  e.stop_on_warning = !accept_warnings;
  if (!decode(cut.data(), cut.size(), scale_num, scale_denom, dst, width, height, channels, pitch,
              e))
    throw Error(
        std::string(e.warning ? "corrupt or truncated JPEG: " : "cannot decode JPEG: ") + e.message,
        ErrorContext{std::string(name), {}, {}, {}});
}

}  // namespace tandem::image
