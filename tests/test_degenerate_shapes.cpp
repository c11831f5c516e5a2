// Photos whose shape is far from the detector's square input: 1-pixel
// strips, a 50,000-pixel side, the same turned by EXIF orientation 6, and a
// strip tall enough that the resize runs in bands. Each decodes within the
// pixel limit and stretches to the 512x512 network input exactly as PIL
// does (Debian's python3-pil: Image.open, ImageOps.exif_transpose,
// resize((512, 512), BILINEAR) of the same file; PIL decodes JPEG with the
// same libjpeg-turbo, so the tolerance is 0). Shapes so stretched that the
// resize would take gigabytes are refused with tandem::Error, never a crash
// (no decoder here reads such a file: libpng stops at 1,000,000 rows, JPEG
// at 65,535, so those are images made in memory).
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "image/resize.h"
#include "image_test_util.h"
#include "pipeline/detector.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kInput = 512;  // the shipped detector's input side

struct Photo {
  std::string file;   // .jpg or .png
  int width, height;  // as stored
  int orientation;    // EXIF, JPEG only
};

// Stripes along both axes, so a transposed or shifted result shows.
Image pattern(int width, int height) {
  Image img(width, height, 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* p = img.row(y) + 3 * size_t(x);
      p[0] = uint8_t((x * 7) / 5), p[1] = uint8_t((y * 11) / 3), p[2] = uint8_t((x + 2 * y) % 251);
    }
  return img;
}

void write_photo(const fs::path& dir, const Photo& s) {
  const Image img = pattern(s.width, s.height);
  std::vector<uint8_t> bytes;
  if (s.file.ends_with(".png")) {
    bytes = encode_png(img);
  } else {
    bytes = encode_jpeg(img, TJPF_RGB, TJSAMP_444, 95, 0);
    if (s.orientation != 1) bytes = with_exif_orientation(bytes, s.orientation);
  }
  write_bytes(dir / s.file, bytes.data(), bytes.size());
}

// The network input DetectorInput writes for `path`, as bytes (its floats
// are whole numbers 0..255).
std::vector<uint8_t> detector_input(const fs::path& path, Image* decoded) {
  *decoded = decode_image_file(path.string(), kInput, kInput);
  pipeline::DetectorInput input(kInput, kInput);
  std::vector<float> x(input.floats());
  input.run(*decoded, x.data());
  return std::vector<uint8_t>(x.begin(), x.end());
}

}  // namespace

TEST(DegenerateShapes, StretchToTheDetectorInputMatchesPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::vector<Photo> photos = {
      {"strip_1x4000.png", 1, 4000, 1},  {"strip_4000x1.jpg", 4000, 1, 1},
      {"side_50000x2.jpg", 50000, 2, 1}, {"side_2x50000.png", 2, 50000, 1},
      {"rot6_4000x1.jpg", 4000, 1, 6},   {"rot6_50000x2.jpg", 50000, 2, 6},
      {"pixel_1x1.jpg", 1, 1, 1},        {"bands_3x60000.png", 3, 60000, 1},  // > 32 MB of rows
  };
  std::string code = "from PIL import Image, ImageOps\n";
  for (const Photo& s : photos) {
    write_photo(dir, s);
    const std::string p = (dir / s.file).string();
    code += "open('" + p + ".raw', 'wb').write(ImageOps.exif_transpose(Image.open('" + p +
            "')).convert('RGB').resize((512, 512), Image.BILINEAR).tobytes())\n";
  }
  ASSERT_TRUE(run_python(dir, code));
  for (const Photo& s : photos) {
    SCOPED_TRACE(s.file);
    Image img;
    const std::vector<uint8_t> ours = detector_input(dir / s.file, &img);
    const bool turned = s.orientation >= 5;
    EXPECT_EQ(img.full_width, turned ? s.height : s.width);
    EXPECT_EQ(img.full_height, turned ? s.width : s.height);
    EXPECT_EQ(img.width, img.full_width) << "no DCT scaling below the input size";
    const std::vector<uint8_t> ref = read_bytes(dir / (s.file + ".raw"));
    ASSERT_EQ(ref.size(), ours.size());
    EXPECT_EQ(max_abs_diff(ours.data(), ref.data(), ref.size()), 0);
  }
}

// A tall strip resized in bands of output rows gives what PIL gives, with
// both filters and a window that starts inside the output.
TEST(DegenerateShapes, ResizeInBandsMatchesPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const Image src = pattern(5, 70000);
  write_pnm(dir / "tall.pnm", src);
  ASSERT_TRUE(run_python(
      dir, "from PIL import Image\nim = Image.open('" + (dir / "tall.pnm").string() +
               "')\n"
               "for f in ('BILINEAR', 'BICUBIC'):\n"
               "    r = im.resize((700, 300), getattr(Image, f)).crop((20, 30, 700, 290))\n"
               "    open('" +
               (dir / "tall").string() + "_' + f, 'wb').write(r.tobytes())\n"));
  for (auto [filter, name] :
       {std::pair{ResampleFilter::bilinear, "BILINEAR"}, {ResampleFilter::bicubic, "BICUBIC"}}) {
    std::vector<uint8_t> ours(size_t(680) * 260 * 3);
    Resampler r;
    r.resize_window(src, 700, 300, 20, 30, 680, 260, ours.data(), filter);
    const std::vector<uint8_t> ref = read_bytes(dir / (std::string("tall_") + name));
    ASSERT_EQ(ref.size(), ours.size()) << name;
    EXPECT_EQ(max_abs_diff(ours.data(), ref.data(), ref.size()), 0) << name;
  }
}

// Within the decoders' 100-MP limit but hopeless to stretch to 512x512 (a
// 1 x 20,000,000 strip would need 30 GB of filtered rows, PIL's way): an
// error that says so, in either orientation, and the resampler still works
// for the next photo.
TEST(DegenerateShapes, HopelessStretchIsAnError) {
  pipeline::DetectorInput input(kInput, kInput);
  std::vector<float> x(input.floats());
  for (auto [w, h] : {std::pair{1, 20'000'000}, {20'000'000, 1}, {3, 5'000'000}}) {
    Image img(w, h, 1);
    std::fill(img.data(), img.data() + img.bytes(), uint8_t(90));
    const std::string e = error_of([&] { input.run(img, x.data()); });
    EXPECT_NE(e.find("too far from the output"), std::string::npos) << w << "x" << h << ": " << e;
  }
  Image ok(40, 30, 3);
  std::fill(ok.data(), ok.data() + ok.bytes(), uint8_t(200));
  input.run(ok, x.data());
  EXPECT_EQ(x[0], 200.f);
  EXPECT_EQ(x.back(), 200.f);
}

// The tallest strip libpng reads (1,000,000 rows, its default limit): decoded
// within the pixel limit and stretched, in bands, to the input; the same
// file over a lower pixel limit is refused naming it.
TEST(DegenerateShapes, MillionRowStripIsStretched) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  Image strip(1, 1'000'000, 1);
  std::fill(strip.data(), strip.data() + strip.bytes(), uint8_t(90));
  const std::vector<uint8_t> png = encode_png(strip);
  write_bytes(dir / "strip.png", png.data(), png.size());
  Image img;
  const std::vector<uint8_t> x = detector_input(dir / "strip.png", &img);
  EXPECT_EQ(img.full_height, 1'000'000);
  EXPECT_EQ(*std::min_element(x.begin(), x.end()), 90);
  EXPECT_EQ(*std::max_element(x.begin(), x.end()), 90);
  DecodeOptions small;
  small.max_pixels = 500'000;
  const std::string e = error_of([&] { decode_image_file((dir / "strip.png").string(), small); });
  EXPECT_NE(e.find("strip.png"), std::string::npos) << e;
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;
}
