#include "pipeline/face_crop.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "image/region_decode.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

// The square around a face that its crop reads, in upright photo pixels.
image::PixelRect square_of(const Face& face) {
  const int x1 = int(std::floor(face.crop.x1)), y1 = int(std::floor(face.crop.y1));
  const int side = std::max(1, int(std::ceil(std::max(face.crop.x2 - face.crop.x1, face.crop.y2 - face.crop.y1))));
  return {x1, y1, side, side};
}

// The DCT scale num/8 a face's square would get alone (image::
// decode_region_into's rule, before clipping): faces are decoded together
// only with faces of the same scale, so that each crop is what it would be
// alone, and a small face does not make a large one decode at full size.
int scale_num(const image::PixelRect& square, int size) {
  for (int num : {1, 2, 4})
    if (int64_t(square.width) * num >= int64_t(8) * size) return num;
  return 8;
}

// The factor s, 1, 2, 4 or 8, by which `img` is DCT-scaled from its full
// size (libjpeg rounds a scaled side up); 0: none of them.
int dct_factor(const image::Image& img) {
  for (int s : {1, 2, 4, 8})
    if (img.width == (img.full_width + s - 1) / s && img.height == (img.full_height + s - 1) / s)
      return s;
  return 0;
}

}  // namespace

KeptPixels kept_decode(std::shared_ptr<const image::Image> decoded) {
  if (!decoded || decoded->empty() || decoded->approximate) return nullptr;
  const int s = dct_factor(*decoded);
  if (s == 0) return nullptr;
  return [img = std::move(decoded), s](const image::PixelRect& r, int shrink, image::Image& out,
                                       image::PixelRect* clipped) {
    if (shrink < s || shrink % s != 0) return false;
    const int f = shrink / s;  // the decoded pixels' blocks that make one output pixel
    // The rectangle in decoded pixels, its sides on multiples of `shrink`
    // in the photo (as the region decode's DCT blocks lie) around the one
    // asked for.
    const int x0 = std::clamp(r.x, 0, img->full_width) / shrink * f;
    const int y0 = std::clamp(r.y, 0, img->full_height) / shrink * f;
    const int x1 = std::min(
        (std::clamp(r.x + r.width, 0, img->full_width) + shrink - 1) / shrink * f, img->width);
    const int y1 = std::min(
        (std::clamp(r.y + r.height, 0, img->full_height) + shrink - 1) / shrink * f, img->height);
    const int ow = (x1 - x0) / f, oh = (y1 - y0) / f;
    if (ow <= 0 || oh <= 0) return false;
    const int c = img->channels;
    out.reshape(ow, oh, c);
    const int area = f * f;
    for (int oy = 0; oy < oh; ++oy) {
      uint8_t* dst = out.row(oy);
      for (int ox = 0; ox < ow; ++ox)
        for (int k = 0; k < c; ++k) {
          int sum = 0;
          for (int by = 0; by < f; ++by) {
            const uint8_t* src = img->row(y0 + oy * f + by) + size_t(c) * size_t(x0 + ox * f) + k;
            for (int bx = 0; bx < f; ++bx) sum += src[size_t(c) * size_t(bx)];
          }
          dst[size_t(c) * size_t(ox) + k] = uint8_t((sum + area / 2) / area);
        }
    }
    if (clipped) *clipped = {x0 * s, y0 * s, ow * shrink, oh * shrink};
    return true;
  };
}

void FaceCropper::crop(std::span<const uint8_t> bytes, const Face& face, const image::DecodeOptions& opt,
                       std::string_view name, float* out) {
  const Face* one = &face;
  crop(bytes, std::span<const Face* const>(&one, 1), opt, name, std::span<float* const>(&out, 1));
}

void FaceCropper::crop(std::span<const uint8_t> bytes, std::span<const Face* const> faces,
                       const image::DecodeOptions& opt, std::string_view name, std::span<float* const> out) {
  TANDEM_ZONE_CAT("face crop", "faces");
  check(faces.size() == out.size(), "FaceCropper::crop: one output per face");
  std::vector<bool> done(faces.size(), false);
  for (size_t first = 0; first < faces.size(); ++first) {
    if (done[first]) continue;
    // At a photo's edge the visible part is narrower than the square and the
    // scale it asks for a little larger than needed: a larger decode, not a
    // blurrier face.
    const int num = scale_num(square_of(*faces[first]), size_);
    std::vector<size_t> group;
    std::vector<image::PixelRect> squares;
    for (size_t k = first; k < faces.size(); ++k) {
      if (done[k] || scale_num(square_of(*faces[k]), size_) != num) continue;
      group.push_back(k);
      squares.push_back(square_of(*faces[k]));
      done[k] = true;
    }
    double scale = 1;
    image::PixelRect origin;
    image::decode_regions_into(region_, bytes, squares, size_, opt, name, &scale, &origin);
    for (size_t k : group) cut(*faces[k], scale, origin, out[k]);
  }
}

bool FaceCropper::crop_kept(const KeptPixels& pixels, std::span<const Face* const> faces,
                            std::span<float* const> out) {
  TANDEM_ZONE_CAT("face crop (kept pixels)", "faces");
  check(faces.size() == out.size(), "FaceCropper::crop_kept: one output per face");
  for (size_t k = 0; k < faces.size(); ++k) {
    const image::PixelRect square = square_of(*faces[k]);
    const int shrink = 8 / scale_num(square, size_);
    image::PixelRect got;
    if (!pixels(square, shrink, region_, &got)) return false;
    cut(*faces[k], 1.0 / shrink, got, out[k]);
  }
  return true;
}

void FaceCropper::cut(const Face& face, double scale, const image::PixelRect& origin, float* out) {
  const image::PixelRect sq = square_of(face);
  // The square at the decoded scale, black where it leaves the photo.
  const int s = std::max(1, int(std::lround(sq.width * scale)));
  square_.reshape(s, s, 3);
  std::memset(square_.data(), 0, square_.bytes());
  const int ox = int(std::lround((origin.x - sq.x) * scale)), oy = int(std::lround((origin.y - sq.y) * scale));
  const int channels = region_.channels;
  for (int ty = std::max(0, oy); ty < std::min(s, oy + region_.height); ++ty) {
    const uint8_t* src = region_.row(ty - oy);
    uint8_t* dst = square_.row(ty);
    for (int tx = std::max(0, ox); tx < std::min(s, ox + region_.width); ++tx) {
      const int x = tx - ox;
      for (int c = 0; c < 3; ++c) dst[3 * tx + c] = src[channels == 1 ? x : channels * x + c];
    }
  }
  pixels_.resize(size_t(size_) * size_t(size_) * 3);
  resampler_.resize_window(square_, size_, size_, 0, 0, size_, size_, pixels_.data());
  for (size_t i = 0; i < pixels_.size(); ++i) out[i] = float(pixels_[i]);
}

}  // namespace tandem::pipeline
