#pragma once
// Antialiased separable resampling that reproduces PIL's Image.resize
// (libImaging/Resample.c) bit for bit on 8-bit images: per output position a
// filter whose support grows with the downscale factor (so downscaling
// averages instead of aliasing), weights normalised to sum 1, stored as
// 22-bit fixed point; a horizontal pass to an 8-bit intermediate, then a
// vertical pass, each rounding and clamping to 0..255.
//
// It can compute just a window of the resized image (what a center crop
// keeps) at the same cost per output pixel: each output pixel depends only
// on its own weights.
#include <cstdint>
#include <vector>

#include "image/image.h"

namespace tandem::image {

enum class ResampleFilter {
  bilinear,  // triangle, support 1 (PIL BILINEAR, torchvision's default)
  bicubic,   // Keys cubic a = -0.5, support 2 (PIL BICUBIC)
};

// Fixed-point weights for output positions [first, first + count) of one
// axis resized from in_size to out_size.
struct ResampleAxis {
  int in_size = 0, out_size = 0, first = 0, count = 0;
  ResampleFilter filter = ResampleFilter::bilinear;
  bool padded = false;
  int taps = 0;                  // weights per output position
  std::vector<int32_t> start;    // [count] first input index
  std::vector<int32_t> length;   // [count] taps that matter (the rest weigh 0)
  std::vector<int32_t> weights;  // [count * taps], 22-bit fixed point
  std::vector<double> scratch;   // [ksize] float weights of one position

  // Recomputes only when a parameter changed. With `padded`, every position
  // gets exactly `taps` taps inside [0, in_size) (zero weights fill the gap),
  // so the inner loop has one trip count.
  void build(int in, int out, int first_out, int n, ResampleFilter f, bool pad);
};

// Holds the weights and intermediate rows between calls, so resizing many
// images of one size allocates nothing after the first. Not thread-safe:
// one per thread.
class Resampler {
 public:
  // Resizes `in` (1, 3 or 4 channels) to out_w x out_h and writes the window
  // x in [x0, x0 + w), y in [y0, y0 + h) of the result to `out`, HWC with
  // row stride w * in.channels bytes. The window must lie inside the output.
  // Throws tandem::Error when the shapes are so far apart (a 1 x 100,000,000
  // strip to 512 x 512) that the resize would take gigabytes or minutes.
  void resize_window(const Image& in, int out_w, int out_h, int x0, int y0, int w, int h,
                     uint8_t* out, ResampleFilter filter = ResampleFilter::bilinear);

 private:
  // Output rows [i0, i1) of the window from input rows [ry0, ry1).
  void resize_band(const Image& in, int ry0, int ry1, int i0, int i1, uint8_t* out);

  ResampleAxis horizontal_, vertical_;
  std::vector<uint8_t> rows_;  // horizontal pass: [input rows of a band][w * channels]
  std::vector<int32_t> acc_;   // vertical pass accumulator: [w * channels]
};

// Whole-image resize, PIL-exact. Throws tandem::Error on non-positive sizes.
Image resize_image(const Image& in, int out_w, int out_h,
                   ResampleFilter filter = ResampleFilter::bilinear);

}  // namespace tandem::image
