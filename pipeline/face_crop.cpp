#include "pipeline/face_crop.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "image/region_decode.h"
#include "profile/zone.h"

namespace tandem::pipeline {

void FaceCropper::crop(std::span<const uint8_t> bytes, const Face& face, const image::DecodeOptions& opt,
                       std::string_view name, float* out) {
  TANDEM_ZONE_CAT("face crop", "faces");
  const int x1 = int(std::floor(face.crop.x1)), y1 = int(std::floor(face.crop.y1));
  const int side = std::max(1, int(std::ceil(std::max(face.crop.x2 - face.crop.x1, face.crop.y2 - face.crop.y1))));
  // At a photo's edge the visible part is narrower than the square and the
  // scale it asks for a little larger than needed: a larger decode, not a
  // blurrier face.
  const image::PixelRect want{x1, y1, side, side};
  double scale = 1;
  image::PixelRect origin;
  image::decode_region_into(region_, bytes, want, size_, opt, name, &scale, &origin);
  // The square at the decoded scale, black where it leaves the photo.
  const int s = std::max(1, int(std::lround(side * scale)));
  square_.reshape(s, s, 3);
  std::memset(square_.data(), 0, square_.bytes());
  const int ox = int(std::lround((origin.x - x1) * scale)), oy = int(std::lround((origin.y - y1) * scale));
  const int channels = region_.channels;
  for (int y = 0; y < region_.height; ++y) {
    const int ty = oy + y;
    if (ty < 0 || ty >= s) continue;
    const uint8_t* src = region_.row(y);
    uint8_t* dst = square_.row(ty);
    for (int x = 0; x < region_.width; ++x) {
      const int tx = ox + x;
      if (tx < 0 || tx >= s) continue;
      for (int c = 0; c < 3; ++c) dst[3 * tx + c] = src[channels == 1 ? x : channels * x + c];
    }
  }
  pixels_.resize(size_t(size_) * size_t(size_) * 3);
  resampler_.resize_window(square_, size_, size_, 0, 0, size_, size_, pixels_.data());
  for (size_t i = 0; i < pixels_.size(); ++i) out[i] = float(pixels_[i]);
}

}  // namespace tandem::pipeline
