#include "image/preprocess.h"

#include <string>

#include "core/error.h"

namespace tandem::image {

Size2 shorter_side_size(int width, int height, int shorter) {
  check(width > 0 && height > 0 && shorter > 0, "resize: sizes must be positive");
  const bool portrait = width <= height;
  const int short_side = portrait ? width : height;
  const int long_side = portrait ? height : width;
  // Python: int(shorter * long / short) -- an exact product, one rounding
  // in the true division, then truncation.
  const double scaled = double(int64_t(shorter) * long_side) / double(short_side);
  check(scaled < double(1 << 30), "resize: output side too large");
  const int new_long = int(scaled);
  return portrait ? Size2{shorter, new_long} : Size2{new_long, shorter};
}

int center_crop_offset(int size, int crop) {
  const int d = size - crop;
  int half = d / 2;  // d >= 0 here
  if (d % 2 == 1 && half % 2 == 1) ++half;  // x.5 rounds to the even neighbour
  return half;
}

PreprocessConfig stretch_config(int width, int height) {
  PreprocessConfig c;
  c.mode = ResizeMode::stretch;
  c.width = width, c.height = height;
  c.layout = PixelLayout::interleaved;
  c.normalize = false;
  return c;
}

PreprocessWindow preprocess_window(const PreprocessConfig& config, int width, int height) {
  if (config.mode == ResizeMode::stretch) return {config.width, config.height, 0, 0};
  const Size2 r = shorter_side_size(width, height, config.resize);
  return {r.width, r.height, center_crop_offset(r.width, config.crop),
          center_crop_offset(r.height, config.crop)};
}

namespace {

void check_config(const PreprocessConfig& c) {
  if (c.mode == ResizeMode::stretch) {
    check(c.width > 0 && c.width <= 16384 && c.height > 0 && c.height <= 16384,
          "preprocess: the stretched size must be in 1..16384, got " + std::to_string(c.width) +
              "x" + std::to_string(c.height));
  } else {
    check(c.resize > 0 && c.resize <= 16384,
          "preprocess: resize must be in 1..16384, got " + std::to_string(c.resize));
    check(c.crop > 0 && c.crop <= c.resize, "preprocess: crop must be in 1..resize (" +
                                                std::to_string(c.resize) + "), got " +
                                                std::to_string(c.crop));
  }
  if (c.normalize)
    for (float s : c.std) check(s != 0.0f, "preprocess: std must be non-zero");
}

}  // namespace

Preprocessor::Preprocessor(const PreprocessConfig& config) : config_(config) {
  check_config(config_);
  for (size_t ch = 0; ch < 3; ++ch) {
    // Normalized: the same float32 operations as ToTensor (x / 255) then
    // Normalize ((x - mean) / std), so each entry equals torchvision's value
    // exactly. Raw: the 8-bit value itself.
    for (int v = 0; v < 256; ++v) {
      const float x = float(v) / 255.0f;
      table_[ch][size_t(v)] =
          config_.normalize ? (x - config_.mean[ch]) / config_.std[ch] : float(v);
    }
  }
}

void Preprocessor::run(const Image& img, std::span<float> out) {
  check(!img.empty() && (img.channels == 1 || img.channels == 3),
        "preprocess: expected a 1- or 3-channel image, got " + std::to_string(img.channels));
  check(out.size() >= output_size(), "preprocess: output buffer has " +
                                         std::to_string(out.size()) + " floats, needs " +
                                         std::to_string(output_size()));
  const int w = config_.output_width(), h = config_.output_height();
  const PreprocessWindow win = preprocess_window(config_, img.width, img.height);
  const size_t C = size_t(img.channels);
  window_.resize(size_t(w) * size_t(h) * C);
  resampler_.resize_window(img, win.resized_width, win.resized_height, win.x0, win.y0, w, h,
                           window_.data(), config_.filter);

  // HWC u8 -> floats through the table (one load per element); a gray
  // image reads its one channel for all three.
  const size_t pixels = size_t(w) * size_t(h);
  const uint8_t* src = window_.data();
  const size_t c1 = C == 1 ? 0 : 1, c2 = C == 1 ? 0 : 2;
  const float *t0 = table_[0].data(), *t1 = table_[1].data(), *t2 = table_[2].data();
  float* dst = out.data();
  if (config_.layout == PixelLayout::interleaved) {
    for (size_t i = 0; i < pixels; ++i, src += C, dst += 3) {
      dst[0] = t0[src[0]];
      dst[1] = t1[src[c1]];
      dst[2] = t2[src[c2]];
    }
    return;
  }
  for (size_t i = 0; i < pixels; ++i, src += C) {
    dst[i] = t0[src[0]];
    dst[pixels + i] = t1[src[c1]];
    dst[2 * pixels + i] = t2[src[c2]];
  }
}

}  // namespace tandem::image
