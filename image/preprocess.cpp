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

Preprocessor::Preprocessor(const PreprocessConfig& config) : config_(config) {
  const auto& c = config_;
  check(c.resize > 0 && c.resize <= 16384, "preprocess: resize must be in 1..16384, got " +
                                               std::to_string(c.resize));
  check(c.crop > 0 && c.crop <= c.resize, "preprocess: crop must be in 1..resize (" +
                                              std::to_string(c.resize) + "), got " +
                                              std::to_string(c.crop));
  for (int ch = 0; ch < 3; ++ch) {
    check(c.std[size_t(ch)] != 0.0f, "preprocess: std must be non-zero");
    // The same float32 operations as ToTensor (x / 255) then Normalize
    // ((x - mean) / std), so each entry equals torchvision's value exactly.
    for (int v = 0; v < 256; ++v) {
      const float x = float(v) / 255.0f;
      table_[size_t(ch)][size_t(v)] = (x - c.mean[size_t(ch)]) / c.std[size_t(ch)];
    }
  }
}

void Preprocessor::run(const Image& img, std::span<float> out) {
  check(!img.empty() && (img.channels == 1 || img.channels == 3),
        "preprocess: expected a 1- or 3-channel image, got " + std::to_string(img.channels));
  check(out.size() >= output_size(), "preprocess: output buffer has " +
                                         std::to_string(out.size()) + " floats, needs " +
                                         std::to_string(output_size()));
  const int crop = config_.crop;
  const Size2 r = shorter_side_size(img.width, img.height, config_.resize);
  const int x0 = center_crop_offset(r.width, crop);
  const int y0 = center_crop_offset(r.height, crop);
  const int C = img.channels;
  window_.resize(size_t(crop) * size_t(crop) * size_t(C));
  resampler_.resize_window(img, r.width, r.height, x0, y0, crop, crop, window_.data(),
                           config_.filter);

  // HWC u8 -> three float planes through the table (one load per element).
  const size_t plane = size_t(crop) * size_t(crop);
  const uint8_t* src = window_.data();
  for (int ch = 0; ch < 3; ++ch) {
    const float* table = table_[size_t(ch)].data();
    float* dst = out.data() + size_t(ch) * plane;
    const int sc = C == 1 ? 0 : ch;
    for (size_t i = 0; i < plane; ++i) dst[i] = table[src[i * size_t(C) + size_t(sc)]];
  }
}

}  // namespace tandem::image
