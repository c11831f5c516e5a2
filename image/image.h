#pragma once
// A decoded 8-bit image, interleaved HWC (row y, column x, channel c at
// data()[(y * width + x) * channels + c]). channels is 1 (gray) or 3 (RGB).
// The pixel buffer is 64-byte aligned and grow-only, so a decoder that reuses
// one Image per thread allocates only when a larger image arrives.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tandem::image {

// Grow-only aligned byte buffer. Copies are deep; contents after a grow are
// unspecified (decoders overwrite every byte).
class PixelBuffer {
 public:
  PixelBuffer() = default;
  PixelBuffer(const PixelBuffer& other);
  PixelBuffer& operator=(const PixelBuffer& other);
  PixelBuffer(PixelBuffer&&) noexcept = default;
  PixelBuffer& operator=(PixelBuffer&&) noexcept = default;

  // Makes room for `bytes`; reallocates only when capacity is short.
  void ensure(size_t bytes);
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t capacity_ = 0;
};

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;  // decoders give 1 (gray) or 3 (RGB); resize also takes 4
  // The EXIF orientation (1..8, image/orientation.h) the decoder applied to
  // turn the stored pixels upright; 1 when the file has none or
  // DecodeOptions::apply_orientation was off; always 1 for HEIF, whose
  // transformations libheif applies itself. Decoders set it on every call.
  int orientation = 1;
  // The upright size at full resolution: what a viewer calls the image's
  // size, and the space detection boxes are reported in. Larger than
  // width x height when a JPEG was decoded DCT-scaled. Decoders set it.
  int full_width = 0, full_height = 0;
  // True when the pixels are an approximation of the file's (a progressive
  // JPEG decoded without its refinement scans, DecodeOptions::
  // coarse_progressive): fit for a network's small input, not to be cut
  // into a sharper view. Decoders set it on every call.
  bool approximate = false;
  PixelBuffer pixels;

  Image() = default;
  Image(int w, int h, int c) { reshape(w, h, c); }

  // Sets the dimensions and makes room for them (contents unspecified).
  // Throws tandem::Error on non-positive or overflowing sizes.
  void reshape(int w, int h, int c);

  uint8_t* data() { return pixels.data(); }
  const uint8_t* data() const { return pixels.data(); }
  uint8_t* row(int y) { return data() + size_t(y) * stride(); }
  const uint8_t* row(int y) const { return data() + size_t(y) * stride(); }
  size_t stride() const { return size_t(width) * size_t(channels); }  // bytes per row
  size_t bytes() const { return stride() * size_t(height); }
  bool empty() const { return width == 0 || height == 0; }
};

// What a decoder may do with an untrusted file.
struct DecodeOptions {
  // JPEG only: decode with the smallest DCT scaling factor whose output is
  // still at least min_width x min_height (a factor never above 1). Both 0
  // means full size; one 0 leaves that axis unconstrained. For a classifier
  // that resizes the shorter side to S, pass min_width = min_height = S.
  int min_width = 0;
  int min_height = 0;
  // Decompression-bomb guard on the *source* size (width * height as the
  // header claims it), checked before any pixel buffer is allocated.
  int64_t max_pixels = 100'000'000;
  // Files larger than this are refused before reading them into memory.
  int64_t max_file_bytes = int64_t(1) << 30;
  // libjpeg reports corrupt or truncated data as a warning and fills in gray;
  // by default that is an error. Set to accept such images as PIL does for
  // some warnings (e.g. extraneous bytes before a marker).
  bool accept_jpeg_warnings = false;
  // Turn the pixels upright as a viewer shows them, following the EXIF
  // Orientation tag (JPEG APP1; PNG eXIf before the image data; WebP EXIF
  // chunk) or, for HEIF, the container's irot/imir/clap transformations.
  // min_width and min_height then refer to the upright image. Off: pixels
  // as stored, which is what PIL's Image.open (and so torchvision's loader)
  // gives.
  bool apply_orientation = true;
  // JPEG only: a progressive file decoded at 1/8 scale skips the scans
  // that scale does not read (luma's AC: the same pixels, far less Huffman
  // decoding; image/jpeg_scans.h). Corruption confined to those scans then
  // goes unnoticed, as it cannot change the pixels. Off: every scan is
  // decoded (for comparisons).
  bool skip_unread_scans = true;
  // JPEG only: a progressive file decoded at 1/4 scale or less (and not
  // served by the exact 1/8 skip above) skips luma's AC refinement scans,
  // the last bits of its AC coefficients: most of a noisy photo's bytes and
  // Huffman work, for pixels within about 53 dB of the exact decode once
  // resized to a network's input (image/jpeg_scans.h). Off by default: an
  // approximation, for callers that measured it harmless (the detector).
  bool coarse_progressive = false;
};

}  // namespace tandem::image
