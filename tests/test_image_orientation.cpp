// EXIF orientation: JPEGs and PNGs written by PIL (Debian's python3-pil 9.4)
// with an Orientation tag, decoded upright by tandem and compared with PIL's
// ImageOps.exif_transpose of the same file. PIL decodes JPEG with the same
// libjpeg-turbo (islow IDCT), and the eight transforms move pixels without
// changing them, so every tolerance here is 0.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "image/exif_orientation.h"
#include "image/orientation.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

// Python helpers shared by the fixtures: save(im, path, o) writes `im` with
// EXIF Orientation o (PIL's own EXIF writer, little-endian "II");
// reference(path, mode, draft) writes <path>.raw and <path>.size from PIL's
// exif_transpose of the decoded file, and <path>.stored.raw without it.
const std::string kPilHelpers = R"(from PIL import Image, ImageOps
def save(im, path, o, **kw):
    ex = Image.Exif()
    ex[0x0112] = o
    im.save(path, exif=ex.tobytes(), **kw)
def reference(path, mode, draft=None):
    im = Image.open(path)
    if draft:
        im.draft(mode, draft)
    up = ImageOps.exif_transpose(im).convert(mode)
    open(path + '.raw', 'wb').write(up.tobytes())
    open(path + '.size', 'w').write('%d %d' % up.size)
    im = Image.open(path)
    if draft:
        im.draft(mode, draft)
    open(path + '.stored.raw', 'wb').write(im.convert(mode).tobytes())
)";

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

struct Size {
  int width = 0, height = 0;
};

Size reference_size(const fs::path& file) {
  Size s;
  std::ifstream(file.string() + ".size") >> s.width >> s.height;
  return s;
}

// Largest byte difference between `img` and <file><suffix> (256 when the
// sizes differ).
int diff_vs(const Image& img, const fs::path& file, const std::string& suffix = ".raw") {
  const std::vector<uint8_t> ref = read_bytes(file.string() + suffix);
  EXPECT_EQ(ref.size(), img.bytes()) << file << suffix;
  if (ref.size() != img.bytes()) return 256;
  return max_abs_diff(img.data(), ref.data(), ref.size());
}

fs::path numbered(const fs::path& dir, const std::string& stem, int o, const std::string& ext) {
  return dir / (stem + std::to_string(o) + ext);
}

// For each orientation 1..8: dog.jpg resized to 203x131 (odd sizes, so the
// edge blocks are partial and the transforms are not symmetric) as an RGB
// JPEG o<N>.jpg, a grayscale JPEG g<N>.jpg and an RGB PNG p<N>.png, each
// with its PIL references.
bool write_fixtures(const fs::path& dir) {
  std::string code = kPilHelpers;
  code += "src = Image.open('" + photo_path("dog") + "').convert('RGB').resize((203, 131))\n";
  code += "d = " + quoted(dir) + "\n";
  code += "for o in range(1, 9):\n"
          "    save(src, '%s/o%d.jpg' % (d, o), o, quality=95)\n"
          "    save(src.convert('L'), '%s/g%d.jpg' % (d, o), o, quality=95)\n"
          "    save(src, '%s/p%d.png' % (d, o), o)\n"
          "    reference('%s/o%d.jpg' % (d, o), 'RGB')\n"
          "    reference('%s/g%d.jpg' % (d, o), 'L')\n"
          "    reference('%s/p%d.png' % (d, o), 'RGB')\n";
  return run_python(dir, code);
}

void expect_upright_matches_pil(const fs::path& file, int orientation, int channels) {
  SCOPED_TRACE(file.string());
  const Image img = decode_image_file(file.string());
  const Size ref = reference_size(file);
  EXPECT_EQ(img.width, ref.width);
  EXPECT_EQ(img.height, ref.height);
  // Independent of PIL: 5..8 swap the 203x131 stored size.
  EXPECT_EQ(img.width, orientation >= 5 ? 131 : 203);
  EXPECT_EQ(img.channels, channels);
  EXPECT_EQ(img.orientation, orientation);
  EXPECT_EQ(diff_vs(img, file), 0);
}

}  // namespace

// The tag as PIL wrote it, read back from the APP1 segment.
TEST(ExifOrientation, ReadsTheTagPilWrote) {
  const ScratchDir scratch;
  ASSERT_TRUE(write_fixtures(scratch.path));
  for (int o = 1; o <= 8; ++o) {
    const std::vector<uint8_t> jpg = read_bytes(numbered(scratch.path, "o", o, ".jpg"));
    EXPECT_EQ(read_jpeg_orientation(jpg), o);
    const std::span<const uint8_t> app1 = find_jpeg_exif(jpg);
    ASSERT_GE(app1.size(), 6u);
    EXPECT_EQ(orientation_from_exif(app1), o);
    EXPECT_EQ(orientation_from_tiff(app1.subspan(6)), o);
  }
}

// Reference: PIL ImageOps.exif_transpose(Image.open(f)).convert(mode).
TEST(ExifOrientation, AllEightJpegAndPngMatchPilExifTranspose) {
  const ScratchDir scratch;
  ASSERT_TRUE(write_fixtures(scratch.path));
  for (int o = 1; o <= 8; ++o) {
    expect_upright_matches_pil(numbered(scratch.path, "o", o, ".jpg"), o, 3);
    expect_upright_matches_pil(numbered(scratch.path, "g", o, ".jpg"), o, 1);
    expect_upright_matches_pil(numbered(scratch.path, "p", o, ".png"), o, 3);
  }
}

// apply_orientation = false gives the pixels as stored, as PIL's plain
// Image.open(f).convert(mode) does.
TEST(ExifOrientation, OffKeepsStoredPixels) {
  const ScratchDir scratch;
  ASSERT_TRUE(write_fixtures(scratch.path));
  DecodeOptions opt;
  opt.apply_orientation = false;
  for (const char* stem : {"o", "g", "p"}) {
    const fs::path f = numbered(scratch.path, stem, 6, std::string(stem) == "p" ? ".png" : ".jpg");
    const Image img = decode_image_file(f.string(), opt);
    EXPECT_EQ(img.width, 203) << f;
    EXPECT_EQ(img.height, 131) << f;
    EXPECT_EQ(img.orientation, 1) << f;
    EXPECT_EQ(diff_vs(img, f, ".stored.raw"), 0) << f;
  }
}

// One Image reused across rotated and unrotated files (the decode loop of
// `classify`): each result equals a fresh decode, and orientation is reset.
TEST(ExifOrientation, ReusedImageGetsEachFileRight) {
  const ScratchDir scratch;
  ASSERT_TRUE(write_fixtures(scratch.path));
  Image img;
  for (int o : {6, 1, 8, 3, 5, 1, 7}) {
    for (const char* stem : {"o", "g", "p"}) {
      const fs::path f = numbered(scratch.path, stem, o, std::string(stem) == "p" ? ".png" : ".jpg");
      const std::vector<uint8_t> bytes = read_bytes(f);
      decode_image_into(img, bytes, {}, f.string());
      EXPECT_EQ(img.orientation, o) << f;
      EXPECT_EQ(diff_vs(img, f), 0) << f;
    }
  }
}

// min_width/min_height ask for the upright image. kite.jpg resized to
// 640x480 and stored with orientation 6 or 8 is 480x640 upright; a request
// for >= 120x160 upright is >= 160x120 stored, which 1/4 covers exactly.
// Reference: PIL draft('RGB', (160, 120)) (also 1/4) then exif_transpose.
// The same request on the unrotated file needs 3/8 (240x180), so reading the
// request in stored orientation would pick the wrong factor.
TEST(ExifOrientation, DctScaleCoversTheUprightRequest) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  std::string code = kPilHelpers;
  code += "src = Image.open('" + photo_path("kite") + "').convert('RGB').resize((640, 480))\n";
  code += "d = " + quoted(dir) + "\n";
  code += "for o in (1, 6, 8):\n"
          "    save(src, '%s/k%d.jpg' % (d, o), o, quality=90)\n"
          "    reference('%s/k%d.jpg' % (d, o), 'RGB', (160, 120))\n";
  ASSERT_TRUE(run_python(dir, code));
  DecodeOptions opt;
  opt.min_width = 120;
  opt.min_height = 160;
  for (int o : {6, 8}) {
    const fs::path f = numbered(dir, "k", o, ".jpg");
    const Image img = decode_image_file(f.string(), opt);
    EXPECT_EQ(img.width, 120) << f;
    EXPECT_EQ(img.height, 160) << f;
    EXPECT_EQ(img.orientation, o);
    EXPECT_EQ(img.full_width, 480) << "upright full size, as PIL's exif_transpose gives";
    EXPECT_EQ(img.full_height, 640);
    EXPECT_EQ(diff_vs(img, f), 0) << f;
  }
  const Image plain = decode_image_file(numbered(dir, "k", 1, ".jpg").string(), opt);
  EXPECT_EQ(plain.width, 240);
  EXPECT_EQ(plain.height, 180);
  EXPECT_EQ(plain.full_width, 640);
  EXPECT_EQ(plain.full_height, 480);
}

// Camera EXIF (big-endian "MM", maker notes, sub-IFDs) from the darknet
// photos, read as PIL reads it; then the same EXIF re-saved by PIL with the
// orientation changed to 6, decoded upright like exif_transpose.
TEST(ExifOrientation, CameraExifReadsAsPilDoes) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  std::string code = kPilHelpers;
  code += "d = " + quoted(dir) + "\nnames = [";
  for (const auto& name : kDarknetPhotos) code += "'" + name + "',";
  code += "]\nfor n in names:\n"
          "    im = Image.open('" + std::string(kDarknetData) + "' + n + '.jpg')\n"
          "    ex = im.getexif()\n"
          "    open('%s/%s.orientation' % (d, n), 'w').write(str(ex.get(0x0112, 1)))\n"
          "    ex[0x0112] = 6\n"
          "    im.save('%s/%s6.jpg' % (d, n), exif=ex.tobytes(), quality=90)\n"
          "    reference('%s/%s6.jpg' % (d, n), 'RGB')\n";
  ASSERT_TRUE(run_python(dir, code));
  for (const auto& name : kDarknetPhotos) {
    int pil_orientation = 0;
    std::ifstream(dir / (name + ".orientation")) >> pil_orientation;
    EXPECT_EQ(read_jpeg_orientation(read_bytes(photo_path(name))), pil_orientation) << name;
    const fs::path rotated = dir / (name + "6.jpg");
    EXPECT_EQ(read_jpeg_orientation(read_bytes(rotated)), 6) << name;
    const Image img = decode_image_file(rotated.string());
    EXPECT_EQ(img.orientation, 6);
    EXPECT_EQ(img.width, reference_size(rotated).width) << name;
    EXPECT_EQ(diff_vs(img, rotated), 0) << name;
  }
}

// orient_image on its own, for the channel counts decoders do not produce
// (4) and sizes that cross its 64-pixel tiles. Reference: PIL's
// Image.transpose with exif_transpose's method for each orientation.
TEST(OrientImage, MatchesPilTransposeForEveryChannelCount) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const int w = 131, h = 70;
  std::mt19937 rng(7);
  const std::vector<std::pair<int, std::string>> modes = {{1, "L"}, {3, "RGB"}, {4, "RGBA"}};
  std::vector<Image> stored;
  for (const auto& [channels, mode] : modes) {
    Image img(w, h, channels);
    for (size_t i = 0; i < img.bytes(); ++i) img.data()[i] = uint8_t(rng());
    write_bytes(dir / (mode + ".raw"), img.data(), img.bytes());
    stored.push_back(std::move(img));
  }
  ASSERT_TRUE(run_python(dir,
      "from PIL import Image\n"
      "T = Image.Transpose\n"
      "methods = {2: T.FLIP_LEFT_RIGHT, 3: T.ROTATE_180, 4: T.FLIP_TOP_BOTTOM, 5: T.TRANSPOSE,\n"
      "           6: T.ROTATE_270, 7: T.TRANSVERSE, 8: T.ROTATE_90}\n"
      "for mode in ('L', 'RGB', 'RGBA'):\n"
      "    im = Image.frombytes(mode, (131, 70), open(" + quoted(dir) + " + '/' + mode + '.raw', 'rb').read())\n"
      "    for o, m in methods.items():\n"
      "        open('%s/%s%d.raw' % (" + quoted(dir) + ", mode, o), 'wb').write(im.transpose(m).tobytes())\n"));
  for (size_t m = 0; m < modes.size(); ++m) {
    Image upright;
    for (int o = 1; o <= 8; ++o) {
      SCOPED_TRACE(modes[m].second + " orientation " + std::to_string(o));
      orient_image(stored[m], o, upright);
      EXPECT_EQ(upright.width, orientation_swaps_axes(o) ? h : w);
      EXPECT_EQ(upright.height, orientation_swaps_axes(o) ? w : h);
      EXPECT_EQ(upright.channels, modes[m].first);
      EXPECT_EQ(upright.orientation, o);
      const std::string ref = o == 1 ? modes[m].second : modes[m].second + std::to_string(o);
      EXPECT_EQ(diff_vs(upright, dir / ref), 0);
    }
  }
}

TEST(OrientImage, RefusesBadArguments) {
  Image img(3, 2, 3);
  Image out;
  EXPECT_THROW(orient_image(img, 0, out), Error);
  EXPECT_THROW(orient_image(img, 9, out), Error);
  EXPECT_THROW(orient_image(img, 6, img), Error);
  EXPECT_THROW(orient_image(Image(), 6, out), Error);
  EXPECT_FALSE(orientation_swaps_axes(4));
  EXPECT_TRUE(orientation_swaps_axes(5));
  EXPECT_TRUE(orientation_swaps_axes(8));
  EXPECT_FALSE(orientation_swaps_axes(9));
}
