// JPEG/PNG decoding against PIL (Debian's python3-pil, which links the same
// libjpeg-turbo 2.1 as TurboJPEG) and hostile inputs. Each test names its
// reference and tolerance.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <algorithm>
#include <functional>
#include <random>
#include <thread>

#include "core/error.h"
#include "image/decode.h"
#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

// Asks PIL to decode each file as `mode` ("RGB" or "L", optionally after
// draft(mode, (w, h)) when draft_w > 0) and write the raw pixels to <file>.raw.
bool pil_decode(const fs::path& dir, const std::vector<fs::path>& files, const std::string& mode,
                int draft_w = 0, int draft_h = 0) {
  std::string code = "from PIL import Image\nfor p in [";
  for (const auto& f : files) code.append("'").append(f.string()).append("',");
  code += "]:\n    im = Image.open(p)\n";
  if (draft_w > 0) {
    code += "    im.draft('" + mode + "', (" + std::to_string(draft_w) + ", " +
            std::to_string(draft_h) + "))\n";
  }
  code += "    im = im.convert('" + mode + "')\n";
  code += "    open(p + '.raw', 'wb').write(im.tobytes())\n";
  return run_python(dir, code);
}

// Decodes `file` with `opt`, compares with <file>.raw from pil_decode and
// returns the largest byte difference (or 256 on a size mismatch).
int diff_vs_pil(const fs::path& file, const DecodeOptions& opt = {}) {
  const Image ours = decode_image_file(file.string(), opt);
  const std::vector<uint8_t> ref = read_bytes(file.string() + ".raw");
  EXPECT_EQ(ref.size(), ours.bytes()) << file << " is " << ours.width << "x" << ours.height;
  if (ref.size() != ours.bytes()) return 256;
  return max_abs_diff(ours.data(), ref.data(), ref.size());
}

}  // namespace

// Reference: PIL Image.open(p).convert("RGB"); both use libjpeg-turbo's islow
// IDCT and fancy upsampling, so the tolerance is 0 (exact).
TEST(JpegDecode, FullScaleMatchesPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  std::vector<fs::path> files;
  for (const auto& name : kDarknetPhotos) {
    fs::copy_file(photo_path(name), dir / (name + ".jpg"));
    files.push_back(dir / (name + ".jpg"));
  }
  ASSERT_TRUE(pil_decode(dir, files, "RGB"));
  for (const auto& f : files) {
    EXPECT_EQ(diff_vs_pil(f), 0) << f;
  }
}

// Reference: the libjpeg-turbo factor list (1/8 .. 1) and ceil(dim * num / denom).
TEST(JpegDecode, ChoosesSmallestCoveringScale) {
  JpegScale s = choose_jpeg_scale(4032, 3024, 256, 256);  // 12-MP photo for a 256 resize
  EXPECT_EQ(s.num * 8, s.denom);
  EXPECT_EQ(s.width, 504);
  EXPECT_EQ(s.height, 378);
  s = choose_jpeg_scale(4032, 3024, 600, 600);  // 1/8 -> 378 < 600; 1/4 -> 1008x756
  EXPECT_EQ(s.num * 4, s.denom);
  EXPECT_EQ(s.height, 756);
  s = choose_jpeg_scale(1000, 1000, 370, 370);  // 1/4 -> 250 < 370; 3/8 -> 375
  EXPECT_EQ(s.num * 8, s.denom * 3);
  EXPECT_EQ(s.width, 375);
  s = choose_jpeg_scale(1001, 999, 0, 0);  // no request: full size
  EXPECT_EQ(s.num, s.denom);
  EXPECT_EQ(s.width, 1001);
  s = choose_jpeg_scale(300, 200, 256, 256);  // smaller than asked: full size, never upscaled
  EXPECT_EQ(s.num, s.denom);
  EXPECT_EQ(s.height, 200);
  s = choose_jpeg_scale(4031, 3023, 0, 100);  // one axis only; ceil(3023 / 8) = 378
  EXPECT_EQ(s.height, 378);
  EXPECT_EQ(s.width, 504);
}

// Reference: PIL's draft mode, which asks libjpeg for the same 1/k scaled
// IDCT (kite: 1352x900 needed at >= 224 -> 1/4 = 338x225). Tolerance 0.
TEST(JpegDecode, DctScaledMatchesPilDraft) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const fs::path f = dir / "kite.jpg";
  fs::copy_file(photo_path("kite"), f);
  ASSERT_TRUE(pil_decode(dir, {f}, "RGB", 224, 224));
  DecodeOptions opt;
  opt.min_width = opt.min_height = 224;
  const Image img = decode_image_file(f.string(), opt);
  EXPECT_EQ(img.width, 338);
  EXPECT_EQ(img.height, 225);
  EXPECT_EQ(diff_vs_pil(f, opt), 0);
  // 1/8 of the dog (768x576) for a 64-pixel request: 96x72.
  const Image small = decode_image_file(photo_path("dog"), 64, 64);
  EXPECT_EQ(small.width, 96);
  EXPECT_EQ(small.height, 72);
}

// Grayscale, CMYK (Adobe-inverted, as PIL writes it) and progressive JPEGs
// written by PIL from dog.jpg. Reference: PIL decoding the same files
// (CMYK via its convert("RGB") formula). Tolerance 0.
TEST(JpegDecode, GrayCmykProgressiveMatchPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  ASSERT_TRUE(run_python(dir, "from PIL import Image\n"
                              "im = Image.open('" + photo_path("dog") + "')\n"
                              "im.convert('L').save('" + (dir / "gray.jpg").string() + "', quality=90)\n"
                              "im.convert('CMYK').save('" + (dir / "cmyk.jpg").string() + "', quality=90)\n"
                              "im.save('" + (dir / "prog.jpg").string() + "', quality=90, progressive=True)\n"
                              "im.save('" + (dir / "444.jpg").string() + "', quality=95, subsampling=0)\n"));
  ASSERT_TRUE(pil_decode(dir, {dir / "gray.jpg"}, "L"));
  ASSERT_TRUE(pil_decode(dir, {dir / "cmyk.jpg", dir / "prog.jpg", dir / "444.jpg"}, "RGB"));
  EXPECT_EQ(read_jpeg_info(read_bytes(dir / "cmyk.jpg")).colorspace, TJCS_CMYK);
  const Image gray = decode_image_file((dir / "gray.jpg").string());
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(diff_vs_pil(dir / "gray.jpg"), 0);
  EXPECT_EQ(diff_vs_pil(dir / "cmyk.jpg"), 0);
  EXPECT_EQ(diff_vs_pil(dir / "prog.jpg"), 0);
  EXPECT_EQ(diff_vs_pil(dir / "444.jpg"), 0);
  // Progressive and CMYK files scale in the DCT domain too.
  EXPECT_EQ(decode_image_file((dir / "prog.jpg").string(), 96, 72).width, 96);
  EXPECT_EQ(decode_image_file((dir / "cmyk.jpg").string(), 96, 72).height, 72);
}

// YCCK (what TurboJPEG writes from CMYK pixels, and what Adobe tools write).
// Reference: PIL decoding the same file and converting to RGB. Tolerance 0.
TEST(JpegDecode, YcckMatchesPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const Image rgb = decode_image_file(photo_path("giraffe"));
  const std::vector<uint8_t> jpg = encode_jpeg(cmyk_of(rgb), TJPF_CMYK, TJSAMP_420, 90, 0);
  ASSERT_FALSE(jpg.empty());
  write_bytes(dir / "ycck.jpg", jpg.data(), jpg.size());
  EXPECT_EQ(read_jpeg_info(read_bytes(dir / "ycck.jpg")).colorspace, TJCS_YCCK);
  ASSERT_TRUE(pil_decode(dir, {dir / "ycck.jpg"}, "RGB"));
  EXPECT_EQ(diff_vs_pil(dir / "ycck.jpg"), 0);
}

// PNG color types written by PIL from dog.jpg (and a 16-bit RGB PNG written
// by hand with zlib). Reference: PIL convert("RGB"/"L"), i.e. palette
// expanded, alpha dropped; for 16-bit the high byte of each sample. Tolerance 0.
TEST(PngDecode, ColorTypesMatchPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::string d = dir.string() + "/";
  ASSERT_TRUE(run_python(dir, "from PIL import Image\nimport numpy as np, zlib, struct\n"
      "im = Image.open('" + photo_path("dog") + "').resize((301, 203))\n"
      "im.save('" + d + "rgb.png')\n"
      "a = im.copy(); a.putalpha(Image.linear_gradient('L').resize(im.size)); a.save('" + d + "rgba.png')\n"
      "im.convert('P', palette=Image.ADAPTIVE).save('" + d + "pal.png', transparency=3)\n"
      "im.convert('L').save('" + d + "gray.png')\n"
      "im.convert('LA').save('" + d + "la.png')\n"
      "im.convert('1').save('" + d + "bits.png')\n"
      "w, h = 37, 23\n"
      "x = np.random.default_rng(1).integers(0, 65536, (h, w, 3), dtype=np.uint16)\n"
      "raw = b''.join(b'\\0' + x[r].astype('>u2').tobytes() for r in range(h))\n"
      "def chunk(t, b): return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b))\n"
      "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 16, 2, 0, 0, 0))"
      " + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')\n"
      "open('" + d + "rgb16.png', 'wb').write(png)\n"
      "open('" + d + "rgb16.png.raw', 'wb').write((x >> 8).astype(np.uint8).tobytes())\n"
      // Adam7-interlaced 8-bit RGB, written by hand (PIL cannot write it);
      // reference: the array itself.
      "y = np.asarray(im)\n"
      "passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]\n"
      "raw = b''\n"
      "for x0, y0, dx, dy in passes:\n"
      "    sub = y[y0::dy, x0::dx]\n"
      "    if sub.size: raw += b''.join(b'\\0' + r.tobytes() for r in sub)\n"
      "w, h = im.size\n"
      "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 1))"
      " + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')\n"
      "open('" + d + "adam7.png', 'wb').write(png)\n"
      "open('" + d + "adam7.png.raw', 'wb').write(y.tobytes())\n"));
  ASSERT_TRUE(pil_decode(dir, {dir / "rgb.png", dir / "rgba.png", dir / "pal.png"}, "RGB"));
  ASSERT_TRUE(pil_decode(dir, {dir / "gray.png", dir / "la.png", dir / "bits.png"}, "L"));
  for (const char* f : {"rgb.png", "rgba.png", "pal.png", "gray.png", "la.png", "bits.png",
                        "rgb16.png", "adam7.png"}) {
    EXPECT_EQ(diff_vs_pil(dir / f), 0) << f;
  }
  EXPECT_EQ(decode_image_file(d + "la.png").channels, 1);
  EXPECT_EQ(decode_image_file(d + "rgba.png").channels, 3);
}

// Format comes from the magic bytes, not the file name.
TEST(Decode, SniffsContentNotExtension) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  fs::copy_file(photo_path("person"), dir / "really_a_jpeg.png");
  const Image img = decode_image_file((dir / "really_a_jpeg.png").string());
  EXPECT_EQ(img.width, 640);
  EXPECT_EQ(img.height, 424);
}

// Decoding on several threads at once (one tjhandle each) gives the same
// pixels as decoding on one. Reference: the single-threaded decode; exact.
TEST(JpegDecode, ConcurrentDecodesMatchSerial) {
  std::vector<Image> serial;
  for (const auto& name : kDarknetPhotos) serial.push_back(decode_image_file(photo_path(name), 200, 200));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < kDarknetPhotos.size(); ++i) {
          const size_t k = (i + size_t(t)) % kDarknetPhotos.size();
          const Image img = decode_image_file(photo_path(kDarknetPhotos[k]), 200, 200);
          if (img.bytes() != serial[k].bytes() ||
              max_abs_diff(img.data(), serial[k].data(), img.bytes()) != 0)
            ++mismatches[size_t(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
}
