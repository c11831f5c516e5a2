// A face cut from a photo's kept full-resolution pixels (what the GPU's JPEG
// decoder leaves on the device, pipeline/face_crop.h's crop_kept) against
// the same face cut from a region decode of the file (crop), the path every
// photo the CPU decodes takes. The kept pixels here come from libjpeg's own
// full-size decode of the photo, upright, so the two differ only where the
// region decode scales its DCT (a large face) or pads at the photo's edge.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>

#include "image/decode.h"
#include "image_test_util.h"
#include "pipeline/face_crop.h"

namespace tandem::pipeline {
namespace {

using image::testing::block_means;
using image::testing::encode_jpeg;
using image::testing::with_exif_orientation;

// Skin-like gradients with fine texture, so that a wrong offset or
// orientation shows.
image::Image textured(int w, int h) {
  image::Image img(w, h, 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = img.row(y) + 3 * x;
      p[0] = uint8_t(std::clamp(
          140 + 70 * std::sin(x * 0.013 + y * 0.002) + 30 * std::sin(x * 0.31), 0.0, 255.0));
      p[1] = uint8_t(std::clamp(110 + 60 * std::cos(y * 0.011) + 25 * std::sin((x + 2 * y) * 0.23),
                                0.0, 255.0));
      p[2] = uint8_t(
          std::clamp(90 + 50 * std::sin((x - y) * 0.006) + 20 * std::cos(y * 0.41), 0.0, 255.0));
    }
  return img;
}

Face face_at(float x, float y, float side) {
  Face f;
  f.box = {x, y, x + side / 1.4f, y + side / 1.4f};
  f.crop = {x, y, x + side, y + side};
  return f;
}

struct Diff {
  int max = 0;
  double mean = 0;
};

Diff diff(const std::vector<float>& a, const std::vector<float>& b) {
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    const int e = int(std::lround(std::fabs(a[i] - b[i])));
    d.max = std::max(d.max, e);
    d.mean += e;
  }
  d.mean /= double(a.size());
  return d;
}

// A face cut from `kept` against the same face cut from a region decode of
// `jpeg`; nothing when `kept` does not serve it.
std::optional<Diff> kept_against_region(const KeptPixels& kept, const std::vector<uint8_t>& jpeg,
                                        const Face& face, int side) {
  std::vector<float> from_kept(size_t(side) * side * 3, -1.f), decoded(from_kept.size(), -2.f);
  const Face* f = &face;
  float* a = from_kept.data();
  float* b = decoded.data();
  FaceCropper cropper(side);
  if (!cropper.crop_kept(kept, std::span<const Face* const>(&f, 1), std::span<float* const>(&a, 1)))
    return std::nullopt;
  cropper.crop(jpeg, face, image::DecodeOptions{}, "test.jpg", b);
  return diff(from_kept, decoded);
}

TEST(FaceCrop, KeptPixelsGiveTheRegionDecodesCrop) {
  constexpr int kSide = 224;
  for (int orientation : {1, 6, 3}) {
    SCOPED_TRACE("EXIF orientation " + std::to_string(orientation));
    const std::vector<uint8_t> jpeg = with_exif_orientation(
        encode_jpeg(textured(1600, 1200), TJPF_RGB, TJSAMP_420, 92, 0), orientation);
    image::DecodeOptions whole;
    const image::Image upright = image::decode_image(jpeg, whole);
    std::vector<int> shrinks;
    const KeptPixels kept = [&](const image::PixelRect& r, int shrink, image::Image& out,
                                image::PixelRect* got) {
      shrinks.push_back(shrink);
      const int x0 = std::clamp(r.x, 0, upright.width), y0 = std::clamp(r.y, 0, upright.height);
      const int w = (std::clamp(r.x + r.width, 0, upright.width) - x0) / shrink * shrink,
                h = (std::clamp(r.y + r.height, 0, upright.height) - y0) / shrink * shrink;
      if (w <= 0 || h <= 0) return false;
      out = block_means(upright, x0, y0, w, h, shrink);
      *got = {x0, y0, w, h};
      return true;
    };
    // Full scale in the region decode (under 448 pixels), half scale (a
    // large face), and one reaching past the top-left corner.
    const std::vector<Face> faces = {face_at(300, 200, 180), face_at(500, 300, 520),
                                     face_at(-40, -30, 200)};
    const std::vector<Diff> limits = {{1, 0.05}, {8, 1.5}, {1, 0.05}};
    for (size_t k = 0; k < faces.size(); ++k) {
      SCOPED_TRACE("face " + std::to_string(k));
      const std::optional<Diff> got = kept_against_region(kept, jpeg, faces[k], kSide);
      ASSERT_TRUE(got);
      const Diff d = *got;
      EXPECT_LE(d.max, limits[k].max);
      EXPECT_LE(d.mean, limits[k].mean);
      std::printf("[ INFO     ] orientation %d, face %zu: max |diff| %d, mean %.3f levels\n",
                  orientation, k, d.max, d.mean);
    }
    // The scales the region decodes take: full, half, full.
    EXPECT_EQ(shrinks, (std::vector<int>{1, 2, 1}));
  }
}

// The CPU decoders' pixels for the network (kept_decode): a face the region
// decode would read at the network's DCT scale or coarser is cut from
// them, a smaller one is refused; a progressive photo decoded without its
// refinement scans serves none.
TEST(FaceCrop, TheNetworksDecodeServesLargeFacesOnly) {
  constexpr int kSide = 224;
  for (int orientation : {1, 6}) {
    SCOPED_TRACE("EXIF orientation " + std::to_string(orientation));
    const std::vector<uint8_t> jpeg = with_exif_orientation(
        encode_jpeg(textured(1600, 1200), TJPF_RGB, TJSAMP_420, 92, 0), orientation);
    image::DecodeOptions half;
    half.min_width = half.min_height = 500;  // 1/2 scale: 800 x 600 upright, or 600 x 800
    auto decoded = std::make_shared<image::Image>(image::decode_image(jpeg, half));
    ASSERT_EQ(decoded->full_width, 2 * decoded->width);
    const KeptPixels kept = kept_decode(decoded);
    ASSERT_TRUE(kept);
    // Half scale in the region decode (a 520-pixel square), an eighth (a
    // 1,000-pixel one past the right edge: 2 x 2 blocks of the half-scale
    // pixels, against a decode of DC terms), and full scale (refused).
    const std::vector<Face> faces = {face_at(503, 301, 520), face_at(250, 100, 1000),
                                     face_at(300, 200, 180)};
    const std::vector<Diff> limits = {{1, 0.02}, {4, 0.5}, {0, 0}};
    for (size_t k = 0; k < faces.size(); ++k) {
      SCOPED_TRACE("face " + std::to_string(k));
      const std::optional<Diff> got = kept_against_region(kept, jpeg, faces[k], kSide);
      EXPECT_EQ(got.has_value(), k < 2);
      if (!got) continue;
      const Diff d = *got;
      EXPECT_LE(d.max, limits[k].max);
      EXPECT_LE(d.mean, limits[k].mean);
      std::printf("[ INFO     ] orientation %d, face %zu: max |diff| %d, mean %.3f levels\n",
                  orientation, k, d.max, d.mean);
    }
  }
  // Approximate pixels serve nothing.
  const std::vector<uint8_t> progressive =
      encode_jpeg(textured(1600, 1200), TJPF_RGB, TJSAMP_420, 92, TJFLAG_PROGRESSIVE);
  image::DecodeOptions coarse;
  coarse.min_width = coarse.min_height = 300;  // 1/4 scale
  coarse.coarse_progressive = true;
  auto approximate = std::make_shared<image::Image>(image::decode_image(progressive, coarse));
  EXPECT_TRUE(approximate->approximate);
  EXPECT_FALSE(kept_decode(approximate));
  coarse.coarse_progressive = false;
  auto exact = std::make_shared<image::Image>(image::decode_image(progressive, coarse));
  EXPECT_FALSE(exact->approximate);
  EXPECT_TRUE(kept_decode(exact));
}

TEST(FaceCrop, GonePixelsAreReportedNotCut) {
  const KeptPixels gone = [](const image::PixelRect&, int, image::Image&, image::PixelRect*) {
    return false;
  };
  const Face f = face_at(10, 10, 100);
  const Face* one = &f;
  std::vector<float> out(224 * 224 * 3);
  float* o = out.data();
  EXPECT_FALSE(FaceCropper(224).crop_kept(gone, std::span<const Face* const>(&one, 1),
                                          std::span<float* const>(&o, 1)));
}

}  // namespace
}  // namespace tandem::pipeline
