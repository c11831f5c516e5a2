#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"

namespace tandem::image {

namespace {

constexpr int kPrecisionBits = 22;  // PIL's 32 - 8 - 2: sum of |w| * 255 fits int32
constexpr int32_t kHalf = int32_t(1) << (kPrecisionBits - 1);

double filter_support(ResampleFilter f) { return f == ResampleFilter::bilinear ? 1.0 : 2.0; }

double filter_weight(ResampleFilter f, double x) {
  x = std::fabs(x);
  if (f == ResampleFilter::bilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

int32_t to_fixed(double w) {
  return int32_t(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
}

inline uint8_t clip8(int32_t acc) {
  int32_t v = acc >> kPrecisionBits;
  return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One row of the horizontal pass: out[j*C + c] for j in [0, ax.count).
template <int C>
void resample_row(const uint8_t* src, const ResampleAxis& ax, uint8_t* dst) {
  const int taps = ax.taps;
  for (int j = 0; j < ax.count; ++j) {
    const uint8_t* p = src + size_t(ax.start[size_t(j)]) * C;
    const int32_t* k = ax.weights.data() + size_t(j) * size_t(taps);
    int32_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = kHalf;
    for (int t = 0; t < taps; ++t)
      for (int c = 0; c < C; ++c) acc[c] += int32_t(p[t * C + c]) * k[t];
    for (int c = 0; c < C; ++c) dst[j * C + c] = clip8(acc[c]);
  }
}

// Taps per output position before padding: PIL's ksize, the filter's
// support widened by the downscale factor, both sides, plus one.
int kernel_size(int in, int out, ResampleFilter f) {
  const double support = filter_support(f) * std::max(double(in) / out, 1.0);
  return int(std::ceil(support)) * 2 + 1;
}

// The horizontal pass keeps at most this many bytes of filtered rows: an
// image far taller than the output (a 1 x 2,000,000 strip stretched to
// 512 x 512 needs all its rows, each 512 pixels wide after that pass) is
// resized in bands of output rows. An ordinary photo fits in one band
// (4000 x 3000 to 512 x 512: 4.6 MB).
constexpr size_t kBandBytes = size_t(32) << 20;

// Shapes whose resize would need more scratch than this, or more
// multiply-adds than kMaxResizeWork, are refused: so stretched a shape (a
// 1 x 20,000,000 strip is within the decoders' pixel limit) would take
// hundreds of megabytes per decoding thread, or minutes. A 100-MP photo to
// 512 x 512 needs 2 MB and 0.7 G multiply-adds.
constexpr double kMaxResizeBytes = double(128 << 20);
constexpr double kMaxResizeWork = 8e9;

// Refuses the resize of `in` to a w x h window of out_w x out_h when it
// would be that costly, before any weight is computed.
void check_resize_cost(const Image& in, int out_w, int out_h, int w, int h, ResampleFilter f) {
  const double taps_x = std::min(kernel_size(in.width, out_w, f), in.width);
  const double taps_y = std::min(kernel_size(in.height, out_h, f), in.height);
  const double row = double(w) * in.channels;
  // Rows the horizontal pass filters: each once in one band, else each
  // band's own (a band of B output rows reads at most B * taps_y).
  const double span = std::min(double(in.height), h * taps_y);
  const double rows = span * row <= double(kBandBytes) ? span : h * taps_y;
  // Weights (and the float scratch) of both axes, one band's rows, the
  // accumulator; then the work of both passes.
  const double bytes = 4.0 * (w * taps_x + h * taps_y) + 8.0 * (taps_x + taps_y) +
                       row * (std::min(rows, double(kBandBytes) / row + taps_y) + 4);
  const double work = row * (taps_x * rows + taps_y * h);
  check(bytes <= kMaxResizeBytes && work <= kMaxResizeWork,
        "resize: " + std::to_string(in.width) + "x" + std::to_string(in.height) + " to " +
            std::to_string(out_w) + "x" + std::to_string(out_h) + " would need " +
            std::to_string(int64_t(bytes / (1 << 20))) + " MB and " +
            std::to_string(int64_t(work / 1e6)) +
            " M multiply-adds: the image's shape is too far from the output's");
}

void resample_rows(const Image& in, int y0, int rows, const ResampleAxis& ax, uint8_t* out) {
  const size_t out_stride = size_t(ax.count) * size_t(in.channels);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* src = in.row(y0 + r);
    uint8_t* dst = out + size_t(r) * out_stride;
    switch (in.channels) {
      case 1: resample_row<1>(src, ax, dst); break;
      case 3: resample_row<3>(src, ax, dst); break;
      default: resample_row<4>(src, ax, dst); break;
    }
  }
}

}  // namespace

void ResampleAxis::build(int in, int out, int first_out, int n, ResampleFilter f, bool pad) {
  if (in == in_size && out == out_size && first_out == first && n == count && f == filter &&
      pad == padded && !start.empty())
    return;
  in_size = in, out_size = out, first = first_out, count = n, filter = f, padded = pad;
  // PIL precompute_coeffs(): the support widens by the downscale factor.
  const double scale = double(in) / out;
  const double filterscale = std::max(scale, 1.0);
  const double support = filter_support(f) * filterscale;
  const int ksize = kernel_size(in, out, f);
  taps = pad ? std::min(ksize, in) : ksize;
  start.assign(size_t(n), 0);
  length.assign(size_t(n), 0);
  weights.assign(size_t(n) * size_t(taps), 0);
  const double ss = 1.0 / filterscale;  // multiply, not divide: PIL's rounding
  scratch.resize(size_t(ksize));
  double* k = scratch.data();
  for (int i = 0; i < n; ++i) {
    const double center = (first_out + i + 0.5) * scale;
    int xmin = std::max(int(center - support + 0.5), 0);  // (int) truncates, as in C
    int xmax = std::min(int(center + support + 0.5), in) - xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = filter_weight(f, (x + xmin - center + 0.5) * ss);
      sum += k[x];
    }
    // Padding: slide the window left so it ends inside the row; the weights
    // keep their input positions, the new leading taps weigh 0.
    const int shift = pad ? std::max(xmin + taps - in, 0) : 0;
    start[size_t(i)] = xmin - shift;
    length[size_t(i)] = xmax + shift;
    int32_t* w = weights.data() + size_t(i) * size_t(taps) + size_t(shift);
    for (int x = 0; x < xmax; ++x) w[x] = to_fixed(sum != 0.0 ? k[x] / sum : k[x]);
  }
}

void Resampler::resize_window(const Image& in, int out_w, int out_h, int x0, int y0, int w, int h,
                              uint8_t* out, ResampleFilter filter) {
  check(!in.empty() && in.channels >= 1 && in.channels <= 4, "resize: empty or unsupported image");
  check(out_w > 0 && out_h > 0 && w > 0 && h > 0 && x0 >= 0 && y0 >= 0 && x0 + w <= out_w &&
            y0 + h <= out_h,
        "resize: window " + std::to_string(w) + "x" + std::to_string(h) + "+" + std::to_string(x0) +
            "+" + std::to_string(y0) + " is not inside " + std::to_string(out_w) + "x" +
            std::to_string(out_h));
  check_resize_cost(in, out_w, out_h, w, h, filter);
  const int C = in.channels;
  horizontal_.build(in.width, out_w, x0, w, filter, /*pad=*/true);
  vertical_.build(in.height, out_h, y0, h, filter, /*pad=*/false);
  const size_t row_bytes = size_t(w) * size_t(C);
  acc_.resize(row_bytes);
  // Bands of output rows [i0, i1) whose input rows fit kBandBytes (at least
  // one output row each). Every output row's input range ends at or after
  // the previous one's, so a band reads [start[i0], end of row i1 - 1).
  auto input_end = [&](int i) { return vertical_.start[size_t(i)] + vertical_.length[size_t(i)]; };
  for (int i0 = 0; i0 < h;) {
    const int ry0 = vertical_.start[size_t(i0)];
    int i1 = i0 + 1;
    while (i1 < h && size_t(input_end(i1) - ry0) * row_bytes <= kBandBytes) ++i1;
    resize_band(in, ry0, input_end(i1 - 1), i0, i1, out);
    i0 = i1;
  }
}

void Resampler::resize_band(const Image& in, int ry0, int ry1, int i0, int i1, uint8_t* out) {
  // Horizontal pass over only the input rows the band's vertical taps read.
  const size_t row_bytes = size_t(horizontal_.count) * size_t(in.channels);
  rows_.resize(size_t(ry1 - ry0) * row_bytes);
  resample_rows(in, ry0, ry1 - ry0, horizontal_, rows_.data());

  // Vertical pass: a weighted sum of whole rows, contiguous in j, which the
  // compiler vectorizes (u8 -> i32 multiply-add).
  int32_t* acc = acc_.data();
  for (int i = i0; i < i1; ++i) {
    const int32_t* k = vertical_.weights.data() + size_t(i) * size_t(vertical_.taps);
    const uint8_t* src = rows_.data() + size_t(vertical_.start[size_t(i)] - ry0) * row_bytes;
    std::fill(acc, acc + row_bytes, kHalf);
    for (int t = 0; t < vertical_.length[size_t(i)]; ++t) {
      const int32_t kt = k[t];
      const uint8_t* s = src + size_t(t) * row_bytes;
      for (size_t j = 0; j < row_bytes; ++j) acc[j] += int32_t(s[j]) * kt;
    }
    uint8_t* dst = out + size_t(i) * row_bytes;
    for (size_t j = 0; j < row_bytes; ++j) dst[j] = clip8(acc[j]);
  }
}

Image resize_image(const Image& in, int out_w, int out_h, ResampleFilter filter) {
  check(out_w > 0 && out_h > 0, "resize: output size must be positive");
  Image out(out_w, out_h, in.channels);
  Resampler r;
  r.resize_window(in, out_w, out_h, 0, 0, out_w, out_h, out.data(), filter);
  return out;
}

}  // namespace tandem::image
