// decode_region_into (image/region_decode.h): a part of a photo, decoded by
// libjpeg's crop and skip for JPEGs, against the same part cropped out of
// decode_image's whole-photo decode at the same DCT scale (upright, same
// libjpeg, same islow IDCT and fancy upsampling).
//
// Tolerance: 0 on every pixel. libjpeg's fancy upsampling of subsampled
// chroma (4:2:0, 4:2:2, 4:1:1) treats the first and last column of a
// jpeg_crop_scanline crop as the image's edge: cropped exactly at the
// region's columns, the region's first and last stored column differed
// from the whole decode by up to 18 levels (measured over these tests'
// fixtures: at full scale, and at 1/2 and 1/4 for 4:2:2 and 4:1:1, whose
// chroma is still upsampled there), every other pixel by 0. The decoder
// therefore crops one decoded column wider on each side, which makes every
// pixel exact; this test keeps it so. Rows needed no margin:
// jpeg_skip_scanlines decodes the chroma context rows the upsampler reads.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "image/exif_orientation.h"
#include "image/jpeg_decoder.h"
#include "image/orientation.h"
#include "image/region_decode.h"
#include "image/resize.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;

namespace {

// dog.jpg resized to odd sizes, so that the edge blocks are partial and no
// orientation maps the photo onto itself.
const Image& dog(int w = 403, int h = 301) {
  static Image img =
      resize_image(decode_image_file(photo_path("dog")), w, h, ResampleFilter::bicubic);
  return img;
}

std::vector<uint8_t> dog_jpeg(int subsampling, int flags = 0, int orientation = 1) {
  const Image& src = dog();
  const std::vector<uint8_t> jpg = encode_jpeg(src, TJPF_RGB, subsampling, 90, flags);
  return orientation == 1 ? jpg : with_exif_orientation(jpg, orientation);
}

std::vector<uint8_t> gray_dog_jpeg(int orientation = 1) {
  const Image& src = dog();
  Image gray(src.width, src.height, 1);
  for (size_t i = 0; i < size_t(src.width) * size_t(src.height); ++i) {
    const uint8_t* p = src.data() + 3 * i;
    gray.data()[i] = uint8_t((p[0] * 77 + p[1] * 150 + p[2] * 29) >> 8);
  }
  const std::vector<uint8_t> jpg = encode_jpeg(gray, TJPF_GRAY, TJSAMP_GRAY, 90, 0);
  return orientation == 1 ? jpg : with_exif_orientation(jpg, orientation);
}

// The mirrored upright axes, as orientation.h's table says: where the
// stored row 0 / column 0 end up right or bottom.
bool mirrors_x(int o) { return o == 2 || o == 3 || o == 6 || o == 7; }
bool mirrors_y(int o) { return o == 3 || o == 4 || o == 7 || o == 8; }

// The whole photo decoded upright at exactly num/8: the smallest factor
// covering ceil(width * num / 8) is num/8 itself for photos >= 8 wide.
Image whole_at_scale(const std::vector<uint8_t>& bytes, int num, int full_w) {
  DecodeOptions opt;
  opt.min_width = (full_w * num + 7) / 8;
  return decode_image(bytes, opt, "whole");
}

// Index in the whole decode of the decoded pixel that starts at upright
// full-resolution `origin`: along a mirrored axis the stored image's
// partial last block comes first, so the grid starts at
// full - ceil(full / step) * step.
int whole_index(int origin, int full, int decoded, bool mirrored, int step) {
  const int grid0 = mirrored ? full - decoded * step : 0;
  EXPECT_EQ((origin - grid0) % step, 0) << "origin " << origin << " off the DCT grid";
  return (origin - grid0) / step;
}

// Largest difference between `part` and the whole decode at its place.
int diff_vs_whole(const Image& part, const Image& whole, int x0, int y0) {
  int worst = 0;
  for (int y = 0; y < part.height; ++y) {
    const uint8_t* a = part.row(y);
    const uint8_t* b = whole.row(y0 + y) + size_t(x0) * size_t(whole.channels);
    worst = std::max(worst, max_abs_diff(a, b, part.stride()));
  }
  return worst;
}

struct RegionResult {
  Image img;
  double scale = 0;
  PixelRect origin;
};

RegionResult decode_region(const std::vector<uint8_t>& bytes, PixelRect region, int min_side,
                           const DecodeOptions& opt = {}) {
  RegionResult r;
  decode_region_into(r.img, bytes, region, min_side, opt, "region.jpg", &r.scale, &r.origin);
  return r;
}

// The region decode of `bytes` covers `region` clipped, at most one decoded
// pixel beyond it, and equals the whole decode at its scale there.
void expect_matches_whole(const std::vector<uint8_t>& bytes, PixelRect region, int min_side,
                          int expected_num, int orientation) {
  SCOPED_TRACE("region " + std::to_string(region.x) + "," + std::to_string(region.y) + " " +
               std::to_string(region.width) + "x" + std::to_string(region.height) + " min_side " +
               std::to_string(min_side) + " orientation " + std::to_string(orientation));
  const RegionResult r = decode_region(bytes, region, min_side);
  ASSERT_EQ(r.scale, expected_num / 8.0);
  const int step = 8 / expected_num;
  const Image whole = whole_at_scale(bytes, expected_num, r.img.full_width);
  EXPECT_EQ(r.img.full_width, whole.full_width);
  EXPECT_EQ(r.img.full_height, whole.full_height);
  EXPECT_EQ(r.img.orientation, orientation);
  EXPECT_EQ(r.img.channels, whole.channels);
  EXPECT_EQ(r.origin.width, r.img.width * step);
  EXPECT_EQ(r.origin.height, r.img.height * step);

  const int x0 = std::max(region.x, 0), x1 = std::min(region.x + region.width, whole.full_width);
  const int y0 = std::max(region.y, 0), y1 = std::min(region.y + region.height, whole.full_height);
  EXPECT_LE(r.origin.x, x0);
  EXPECT_GT(r.origin.x, x0 - step);
  EXPECT_GE(r.origin.x + r.origin.width, x1);
  EXPECT_LT(r.origin.x + r.origin.width, x1 + step);
  EXPECT_LE(r.origin.y, y0);
  EXPECT_GT(r.origin.y, y0 - step);
  EXPECT_GE(r.origin.y + r.origin.height, y1);
  EXPECT_LT(r.origin.y + r.origin.height, y1 + step);

  const int wx =
      whole_index(r.origin.x, whole.full_width, whole.width, mirrors_x(orientation), step);
  const int wy =
      whole_index(r.origin.y, whole.full_height, whole.height, mirrors_y(orientation), step);
  ASSERT_GE(wx, 0);
  ASSERT_GE(wy, 0);
  ASSERT_LE(wx + r.img.width, whole.width);
  ASSERT_LE(wy + r.img.height, whole.height);
  EXPECT_EQ(diff_vs_whole(r.img, whole, wx, wy), 0);
}

// Regions of the upright photo (full_w x full_h): inside at odd offsets,
// on each border, partly outside, a corner sliver, and the whole photo.
std::vector<PixelRect> test_regions(int full_w, int full_h) {
  return {{37, 29, 121, 90},
          {0, 0, 50, 40},
          {full_w - 61, full_h - 33, 61, 33},
          {-20, 45, 70, 64},
          {full_w - 30, -15, 100, 80},
          {101, full_h - 17, 88, 300},
          {full_w - 1, full_h - 1, 5, 5},
          {-10, -10, full_w + 20, full_h + 20},
          {9, 17, 1, 1}};
}

// min_side giving each scale num/8 for a region whose shorter side is `s`.
int min_side_for(int num, int s) { return num == 8 ? 0 : s * num / 8; }

void expect_all_regions_match(const std::vector<uint8_t>& bytes, int orientation) {
  const bool swap = orientation_swaps_axes(orientation);
  const int full_w = swap ? dog().height : dog().width;
  const int full_h = swap ? dog().width : dog().height;
  for (const PixelRect& region : test_regions(full_w, full_h)) {
    const int w = std::min(region.x + region.width, full_w) - std::max(region.x, 0);
    const int h = std::min(region.y + region.height, full_h) - std::max(region.y, 0);
    for (int num : {8, 4, 2, 1}) {
      const int side = min_side_for(num, std::min(w, h));
      // A 1-pixel region reaches 1/8 at min_side 0 only as full scale.
      expect_matches_whole(bytes, region, side, side == 0 ? 8 : num, orientation);
    }
  }
}

}  // namespace

// Every orientation, each region at 1, 1/2, 1/4, 1/8, 4:2:0 (the common
// camera subsampling, where upsampling reads neighbours).
TEST(ImageRegion, AllOrientationsMatchWholeDecode) {
  for (int o = 1; o <= 8; ++o) expect_all_regions_match(dog_jpeg(TJSAMP_420, 0, o), o);
}

TEST(ImageRegion, SubsamplingsAndGrayMatchWholeDecode) {
  for (int o : {1, 6}) {
    expect_all_regions_match(dog_jpeg(TJSAMP_444, 0, o), o);
    expect_all_regions_match(dog_jpeg(TJSAMP_422, 0, o), o);
    expect_all_regions_match(dog_jpeg(TJSAMP_440, 0, o), o);
    expect_all_regions_match(dog_jpeg(TJSAMP_411, 0, o), o);
    expect_all_regions_match(gray_dog_jpeg(o), o);
  }
  const RegionResult gray = decode_region(gray_dog_jpeg(), {10, 10, 50, 50}, 0);
  EXPECT_EQ(gray.img.channels, 1);  // as decode_image gives a grayscale JPEG
}

// libjpeg reads every scan before the crop and skip, which then work as on
// a baseline file.
TEST(ImageRegion, ProgressiveMatchesWholeDecode) {
  for (int o : {1, 3, 8}) expect_all_regions_match(dog_jpeg(TJSAMP_420, TJFLAG_PROGRESSIVE, o), o);
}

// coarse_progressive: a progressive file's region skips luma's refinement
// scans (the last bit of each AC coefficient in TurboJPEG's script) and
// says its pixels are approximate, by less the smaller the scale; at 1/8,
// which reads no luma AC, the cut scans are those that scale never reads,
// and the pixels are exact. A baseline file's region is the exact one.
TEST(ImageRegion, CoarseProgressiveSkipsRefinementScans) {
  DecodeOptions coarse;
  coarse.coarse_progressive = true;
  const std::vector<uint8_t> progressive = dog_jpeg(TJSAMP_420, TJFLAG_PROGRESSIVE, 6);
  const std::vector<uint8_t> baseline = dog_jpeg(TJSAMP_420, 0, 6);
  // Measured on this photo: 32.0, 39.3 and 48.0 dB.
  const std::map<int, double> min_db{{8, 30}, {4, 37}, {2, 45}};
  for (int num : {8, 4, 2, 1}) {
    SCOPED_TRACE("scale " + std::to_string(num) + "/8");
    const PixelRect region{40, 90, 160, 200};
    const int min_side = min_side_for(num, 160);
    const RegionResult exact = decode_region(progressive, region, min_side);
    const RegionResult approx = decode_region(progressive, region, min_side, coarse);
    EXPECT_FALSE(exact.img.approximate);
    EXPECT_EQ(approx.img.approximate, num != 1);
    ASSERT_EQ(approx.scale, exact.scale);
    ASSERT_EQ(approx.img.width, exact.img.width);
    ASSERT_EQ(approx.img.height, exact.img.height);
    EXPECT_EQ(approx.origin.x, exact.origin.x);
    EXPECT_EQ(approx.origin.y, exact.origin.y);
    const double db = psnr(approx.img, exact.img);
    if (num == 1) {
      EXPECT_EQ(db, 99.0) << "1/8 reads no refinement bit";
    } else {
      EXPECT_LT(db, 99.0) << "no scan was skipped";
      EXPECT_GT(db, min_db.at(num));
    }

    const RegionResult base_exact = decode_region(baseline, region, min_side);
    const RegionResult base_coarse = decode_region(baseline, region, min_side, coarse);
    EXPECT_FALSE(base_coarse.img.approximate);
    EXPECT_EQ(psnr(base_coarse.img, base_exact.img), 99.0);
  }
}

// A file not written by TurboJPEG (darknet's dog.jpg, 768x576).
TEST(ImageRegion, RealPhotoMatchesWholeDecode) {
  const std::vector<uint8_t> bytes = read_bytes(photo_path("dog"));
  for (int num : {8, 4, 2, 1}) {
    expect_matches_whole(bytes, {129, 223, 200, 250}, min_side_for(num, 200), num, 1);
    expect_matches_whole(bytes, {700, 500, 200, 200}, min_side_for(num, 68), num, 1);
  }
}

// The smallest of 1/8, 1/4, 1/2, 1/1 that keeps the shorter side >= min_side.
TEST(ImageRegion, ScaleChoice) {
  const std::vector<uint8_t> bytes = dog_jpeg(TJSAMP_420);
  const PixelRect region{20, 30, 300, 200};  // shorter side 200
  const std::pair<int, double> cases[] = {{0, 1.0},   {-5, 1.0},  {1, 0.125}, {25, 0.125},
                                          {26, 0.25}, {50, 0.25}, {51, 0.5},  {100, 0.5},
                                          {101, 1.0}, {200, 1.0}, {5000, 1.0}};
  for (const auto& [side, scale] : cases) {
    const RegionResult r = decode_region(bytes, region, side);
    EXPECT_EQ(r.scale, scale) << "min_side " << side;
    EXPECT_EQ(r.img.width, r.origin.width * scale) << "min_side " << side;
  }
  // Clipped first: only 100 x 50 of this one lies in the photo.
  EXPECT_EQ(decode_region(bytes, {303, 251, 300, 200}, 25).scale, 0.5);
  // At full scale the result is the clipped region exactly.
  const RegionResult full = decode_region(bytes, {-7, 290, 60, 60}, 0);
  EXPECT_EQ(full.img.width, 53);
  EXPECT_EQ(full.img.height, 11);
  EXPECT_EQ(full.origin.x, 0);
  EXPECT_EQ(full.origin.y, 290);
}

// Several regions in one pass: the finest scale any region asks for; each
// region's pixels equal the whole decode's at that scale, and the rows
// between the regions' rows are black.
void expect_regions_match_whole(const std::vector<uint8_t>& bytes, const std::vector<PixelRect>& regions,
                                const std::vector<int>& min_sides, int orientation) {
  for (int min_side : min_sides) {
    SCOPED_TRACE("orientation " + std::to_string(orientation) + " min_side " + std::to_string(min_side));
    Image multi;
    double scale = 0;
    PixelRect origin;
    decode_regions_into(multi, bytes, regions, min_side, {}, "regions.jpg", &scale, &origin);
    double finest = 0;
    for (const PixelRect& r : regions) {
      const int w = std::min(r.x + r.width, multi.full_width) - std::max(r.x, 0);
      const int h = std::min(r.y + r.height, multi.full_height) - std::max(r.y, 0);
      if (w > 0 && h > 0) finest = std::max(finest, decode_region(bytes, r, min_side).scale);
    }
    ASSERT_EQ(scale, finest);
    const int num = int(scale * 8), step = 8 / num;
    EXPECT_EQ(multi.orientation, orientation);
    EXPECT_EQ(origin.width, multi.width * step);
    EXPECT_EQ(origin.height, multi.height * step);
    const Image whole = whole_at_scale(bytes, num, multi.full_width);
    const int wx = whole_index(origin.x, whole.full_width, whole.width, mirrors_x(orientation), step);
    const int wy = whole_index(origin.y, whole.full_height, whole.height, mirrors_y(orientation), step);
    // Each region's own decode at this scale lies inside the union and
    // equals it there.
    std::vector<bool> covered(size_t(multi.width) * size_t(multi.height), false);
    for (const PixelRect& r : regions) {
      const int w = std::min(r.x + r.width, multi.full_width) - std::max(r.x, 0);
      const int h = std::min(r.y + r.height, multi.full_height) - std::max(r.y, 0);
      if (w <= 0 || h <= 0) continue;
      const RegionResult one = decode_region(bytes, r, std::min(w, h) * num / 8 > 0 ? std::min(w, h) * num / 8 : 0);
      if (one.scale != scale) continue;  // a region too small for min_side's rule at this scale
      const int dx = (one.origin.x - origin.x) / step, dy = (one.origin.y - origin.y) / step;
      ASSERT_GE(dx, 0);
      ASSERT_GE(dy, 0);
      ASSERT_LE(dx + one.img.width, multi.width);
      ASSERT_LE(dy + one.img.height, multi.height);
      for (int y = 0; y < one.img.height; ++y) {
        EXPECT_EQ(max_abs_diff(one.img.row(y), multi.row(dy + y) + size_t(dx) * size_t(multi.channels),
                               one.img.stride()),
                  0);
        for (int x = 0; x < one.img.width; ++x) covered[size_t(dy + y) * size_t(multi.width) + size_t(dx + x)] = true;
      }
      EXPECT_EQ(diff_vs_whole(one.img, whole, wx + dx, wy + dy), 0);
    }
    // Outside every region's pixels: the whole decode (columns between
    // regions decoded on their rows) or black (rows skipped).
    for (int y = 0; y < multi.height; ++y)
      for (int x = 0; x < multi.width; ++x) {
        if (covered[size_t(y) * size_t(multi.width) + size_t(x)]) continue;
        const uint8_t* a = multi.row(y) + size_t(x) * size_t(multi.channels);
        const uint8_t* b = whole.row(wy + y) + size_t(wx + x) * size_t(whole.channels);
        const bool black = std::all_of(a, a + multi.channels, [](uint8_t v) { return v == 0; });
        ASSERT_TRUE(black || std::equal(a, a + multi.channels, b)) << "pixel " << x << "," << y;
      }
  }
}

// Faces of a group photo: apart on one band, one above another, overlapping,
// one partly outside, one wholly outside (ignored).
TEST(ImageRegion, SeveralRegionsInOnePass) {
  for (int o = 1; o <= 8; ++o) {
    const std::vector<uint8_t> bytes = dog_jpeg(TJSAMP_420, 0, o);
    const bool swap = orientation_swaps_axes(o);
    const int full_w = swap ? dog().height : dog().width, full_h = swap ? dog().width : dog().height;
    expect_regions_match_whole(bytes,
                               {{20, 30, 60, 60}, {full_w - 90, 35, 70, 70}, {40, full_h - 80, 40, 40},
                                {50, 50, 60, 60}, {-20, 150, 50, 50}, {full_w + 5, 0, 10, 10}},
                               {0, 10, 20, 40}, o);
  }
  expect_regions_match_whole(dog_jpeg(TJSAMP_420, TJFLAG_PROGRESSIVE, 6), {{10, 10, 30, 30}, {200, 250, 80, 80}},
                             {0, 30}, 6);
  expect_regions_match_whole(gray_dog_jpeg(3), {{10, 10, 30, 30}, {200, 250, 80, 80}}, {0, 30}, 3);
  // Every region outside: the single region's error.
  const std::vector<PixelRect> outside = {{-50, 0, 50, 10}, {0, 1000, 10, 10}};
  const std::string msg = error_of([&] {
    Image out;
    decode_regions_into(out, dog_jpeg(TJSAMP_420), outside, 0, {}, "regions.jpg");
  });
  EXPECT_NE(msg.find("region outside the photo"), std::string::npos) << msg;
}

// PNG (and the other non-JPEG formats) and CMYK JPEGs: the whole decode at
// full resolution, cropped.
TEST(ImageRegion, FallbacksCropTheWholeDecode) {
  const Image& src = dog();
  const std::vector<uint8_t> png = encode_png(src);
  const std::vector<uint8_t> cmyk = encode_jpeg(cmyk_of(src), TJPF_CMYK, TJSAMP_420, 90, 0);
  for (const std::vector<uint8_t>* bytes : {&png, &cmyk}) {
    const Image whole = decode_image(*bytes);
    for (const PixelRect& region : test_regions(src.width, src.height)) {
      const RegionResult r = decode_region(*bytes, region, 10);
      EXPECT_EQ(r.scale, 1.0);
      const int x0 = std::max(region.x, 0), y0 = std::max(region.y, 0);
      EXPECT_EQ(r.origin.x, x0);
      EXPECT_EQ(r.origin.y, y0);
      EXPECT_EQ(r.img.width, std::min(region.x + region.width, src.width) - x0);
      EXPECT_EQ(r.img.height, std::min(region.y + region.height, src.height) - y0);
      EXPECT_EQ(r.img.full_width, src.width);
      EXPECT_EQ(r.img.channels, 3);
      EXPECT_EQ(diff_vs_whole(r.img, whole, x0, y0), 0);
    }
  }
}

// apply_orientation off: the region is in stored pixels, as decode_image's.
TEST(ImageRegion, OrientationOffUsesStoredPixels) {
  const std::vector<uint8_t> bytes = dog_jpeg(TJSAMP_420, 0, 6);
  DecodeOptions opt;
  opt.apply_orientation = false;
  const RegionResult r = decode_region(bytes, {300, 10, 100, 50}, 0, opt);
  EXPECT_EQ(r.img.orientation, 1);
  EXPECT_EQ(r.img.full_width, 403);
  const Image whole = decode_image(bytes, opt);
  EXPECT_EQ(diff_vs_whole(r.img, whole, 300, 10), 0);
}

// One Image reused across photos of different sizes and orientations gets
// each right (the buffer is grow-only, the stored piece thread-local).
TEST(ImageRegion, ReusedImage) {
  Image out;
  for (int o : {6, 1, 8, 3}) {
    const std::vector<uint8_t> bytes = dog_jpeg(TJSAMP_420, 0, o);
    for (const PixelRect& region : {PixelRect{0, 0, 200, 200}, PixelRect{5, 7, 9, 11}}) {
      decode_region_into(out, bytes, region, 0, {}, "reused.jpg", nullptr, nullptr);
      const RegionResult fresh = decode_region(bytes, region, 0);
      ASSERT_EQ(out.width, fresh.img.width);
      ASSERT_EQ(out.height, fresh.img.height);
      EXPECT_EQ(out.orientation, o);
      EXPECT_EQ(std::memcmp(out.data(), fresh.img.data(), out.bytes()), 0);
    }
  }
}

TEST(ImageRegion, RegionOutsideThePhotoThrows) {
  const std::vector<uint8_t> jpg = dog_jpeg(TJSAMP_420, 0, 6);  // 301 x 403 upright
  const std::vector<uint8_t> png = encode_png(dog());
  for (const std::vector<uint8_t>* bytes : {&jpg, &png}) {
    for (const PixelRect& region :
         {PixelRect{-50, 0, 50, 10}, PixelRect{0, 1000, 10, 10}, PixelRect{10, -30, 10, 30},
          PixelRect{10, 10, 0, 10}, PixelRect{10, 10, -5, 10}, PixelRect{2147483000, 0, 2000, 5}}) {
      const std::string msg = error_of([&] { decode_region(*bytes, region, 0); });
      EXPECT_NE(msg.find("region outside the photo"), std::string::npos) << msg;
      EXPECT_NE(msg.find("region.jpg"), std::string::npos) << msg;
    }
  }
}

TEST(ImageRegion, BrokenBytesThrow) {
  const std::vector<uint8_t> good = dog_jpeg(TJSAMP_420);
  const PixelRect bottom{100, 250, 100, 50};
  const auto throws = [&](const std::vector<uint8_t>& bytes, PixelRect region) {
    return error_of([&] { decode_region(bytes, region, 0); }).find("region.jpg") !=
           std::string::npos;
  };
  EXPECT_TRUE(throws({}, bottom));
  std::vector<uint8_t> garbage(5000);
  std::mt19937 rng(1);
  for (uint8_t& b : garbage) b = uint8_t(rng());
  EXPECT_TRUE(throws(garbage, bottom));
  garbage[0] = 0xFF, garbage[1] = 0xD8, garbage[2] = 0xFF;  // JPEG magic, then noise
  EXPECT_TRUE(throws(garbage, bottom));
  for (size_t keep : {size_t(3), size_t(100), good.size() / 2, good.size() - 200}) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + ptrdiff_t(keep));
    EXPECT_TRUE(throws(cut, bottom)) << "cut to " << keep;
  }
  // Rows below the region are never read, so damage there goes unnoticed.
  const std::vector<uint8_t> cut(good.begin(), good.end() - 200);
  EXPECT_EQ(decode_region(cut, {0, 0, 50, 50}, 0).img.width, 50);
  // The pixel limit holds before anything is decoded.
  DecodeOptions small;
  small.max_pixels = 1000;
  EXPECT_NE(error_of([&] { decode_region(good, bottom, 0, small); }).find("over the limit"),
            std::string::npos);
}

// Bytes flipped anywhere: a decoded region or a tandem::Error, never a
// crash; with accept_jpeg_warnings too.
TEST(ImageRegion, MutatedJpegsNeverCrash) {
  const std::vector<uint8_t> good = dog_jpeg(TJSAMP_420, TJFLAG_PROGRESSIVE, 6);
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = uint8_t(rng());
    DecodeOptions opt;
    opt.accept_jpeg_warnings = i % 2 == 1;
    const PixelRect region{int(rng() % 300), int(rng() % 400), 80, 80};
    try {
      decode_region(bad, region, int(rng() % 60), opt);
    } catch (const Error&) {
    }
  }
}
