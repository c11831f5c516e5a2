// Progressive JPEGs decoded from some of their scans (image/jpeg_scans.h,
// image/jpeg_scan_decoder.h): at 1/8 scale the scans that scale reads. References:
// libjpeg-turbo decoding every scan of the same file (TurboJPEG, the skip
// off) and PIL's draft mode (libjpeg's own 1/8 scaling) on it. Tolerance 0:
// the skipped coefficients are ones the scaled IDCTs never read.
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <random>

#include "core/error.h"
#include "image/decode.h"
#include "image/jpeg_decoder.h"
#include "image/jpeg_scans.h"
#include "image/libjpeg_error.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

// libjpeg's own encoder, for what TurboJPEG cannot ask for: restart markers
// every `restart_blocks` MCUs within the scans of a progressive file.
std::vector<uint8_t> progressive_with_restarts(const Image& src, unsigned restart_blocks) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = JDIMENSION(src.width), c.image_height = JDIMENSION(src.height);
  c.input_components = 3, c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_simple_progression(&c);
  c.restart_interval = restart_blocks;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(src.data()) + size_t(c.next_scanline) * size_t(src.width) * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(mem, mem + size);
  free(mem);
  return out;
}

Image gray_of(const Image& rgb) {
  Image g(rgb.width, rgb.height, 1);
  for (size_t i = 0; i < size_t(rgb.width) * size_t(rgb.height); ++i) {
    const uint8_t* p = rgb.data() + 3 * i;
    g.data()[i] = uint8_t((int(p[0]) * 77 + int(p[1]) * 150 + int(p[2]) * 29) >> 8);
  }
  return g;
}

// 1/8 scale: any request of at most 1/8 of the stored size.
DecodeOptions eighth(bool dc_only) {
  DecodeOptions o;
  o.min_width = o.min_height = 1;
  o.apply_orientation = false;
  o.skip_unread_scans = dc_only;
  return o;
}

void expect_same_pixels(const std::vector<uint8_t>& jpeg, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<uint8_t> dc;
  ASSERT_TRUE(copy_scans(jpeg, dc, ScanCut::eighth));
  EXPECT_LT(dc.size(), jpeg.size() / 2) << "the AC scans were not dropped";
  const Image fast = decode_image(jpeg, eighth(true), what);
  const Image whole = decode_image(jpeg, eighth(false), what);
  ASSERT_EQ(fast.width, whole.width);
  ASSERT_EQ(fast.height, whole.height);
  ASSERT_EQ(fast.channels, whole.channels);
  EXPECT_EQ(max_abs_diff(fast.data(), whole.data(), whole.bytes()), 0);
}

}  // namespace

TEST(JpegEighthScans, OneEighthDecodeEqualsEveryScanDecoded) {
  const Image photo =
      decode_image_file(photo_path("horses"));  // 773x512: partial MCUs on both edges
  expect_same_pixels(encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, TJFLAG_PROGRESSIVE), "4:2:0");
  expect_same_pixels(encode_jpeg(photo, TJPF_RGB, TJSAMP_422, 88, TJFLAG_PROGRESSIVE), "4:2:2");
  expect_same_pixels(encode_jpeg(photo, TJPF_RGB, TJSAMP_444, 88, TJFLAG_PROGRESSIVE), "4:4:4");
  expect_same_pixels(encode_jpeg(gray_of(photo), TJPF_GRAY, TJSAMP_GRAY, 88, TJFLAG_PROGRESSIVE), "gray");
  expect_same_pixels(encode_jpeg(cmyk_of(photo), TJPF_CMYK, TJSAMP_420, 88, TJFLAG_PROGRESSIVE), "YCCK");
  expect_same_pixels(progressive_with_restarts(photo, 3), "restart markers every 3 MCUs");
  expect_same_pixels(progressive_with_restarts(photo, 1), "restart markers every MCU");
}

// Reference: PIL's draft mode, libjpeg scaling the whole file to 1/8 (what
// Pillow users get), on progressive files PIL wrote itself.
TEST(JpegEighthScans, MatchesPilDraftOnPilProgressiveFiles) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  std::vector<fs::path> files;
  for (const std::string& name :
       {std::string("dog"), std::string("eagle"), std::string("person")}) {
    files.push_back(dir / (name + ".jpg"));
    ASSERT_TRUE(run_python(dir, "from PIL import Image\nImage.open('" + photo_path(name) +
                                    "').save('" + files.back().string() +
                                    "', quality=92, progressive=True)\n"));
  }
  for (const fs::path& f : files) {
    const std::vector<uint8_t> bytes = read_bytes(f);
    const JpegInfo info = read_jpeg_info(bytes);
    const std::string code = "from PIL import Image\nim = Image.open('" + f.string() +
                             "')\nim.draft('RGB', (" + std::to_string(info.width / 8) + ", " +
                             std::to_string(info.height / 8) + "))\nopen('" + f.string() +
                             ".raw', 'wb').write(im.convert('RGB').tobytes())\n";
    ASSERT_TRUE(run_python(dir, code));
    std::vector<uint8_t> dc;
    ASSERT_TRUE(copy_scans(bytes, dc, ScanCut::eighth)) << f;
    const Image ours = decode_image(bytes, eighth(true), f.string());
    const std::vector<uint8_t> ref = read_bytes(f.string() + ".raw");
    ASSERT_EQ(ref.size(), ours.bytes()) << f << ": " << ours.width << "x" << ours.height;
    EXPECT_EQ(max_abs_diff(ours.data(), ref.data(), ref.size()), 0) << f;
  }
}

TEST(JpegEighthScans, OnlyWellFormedProgressiveFilesTakeThePath) {
  const Image photo = decode_image_file(photo_path("kite"), 169, 113);
  std::vector<uint8_t> out;
  EXPECT_FALSE(copy_scans(encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, 0), out, ScanCut::eighth)) << "baseline";
  const std::vector<uint8_t> prog = encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, TJFLAG_PROGRESSIVE);
  ASSERT_TRUE(copy_scans(prog, out, ScanCut::eighth));
  // Every prefix lacks EOI (a truncated file): the whole-file decoder must see it.
  for (size_t n = 0; n + 1 < prog.size(); n += 97)
    EXPECT_FALSE(copy_scans(std::span(prog.data(), n), out, ScanCut::eighth)) << n;
  std::vector<uint8_t> junk = prog;
  junk.insert(junk.begin() + 2, {0x12, 0x34});  // bytes where a marker belongs
  EXPECT_FALSE(copy_scans(junk, out, ScanCut::eighth));
  EXPECT_FALSE(copy_scans(prog, out, ScanCut::eighth, 2)) << "more scans than allowed";
  // The result is itself a progressive JPEG with nothing left to drop.
  ASSERT_TRUE(copy_scans(prog, out, ScanCut::eighth));
  std::vector<uint8_t> again;
  EXPECT_FALSE(copy_scans(out, again, ScanCut::eighth));
}

// libjpeg's reading of the frame is the reference: sequential Huffman is
// neither progressive nor arithmetic-coded.
bool libjpeg_says_sequential(const std::vector<uint8_t>& jpeg) {
  jpeg_decompress_struct cinfo;
  LibjpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = libjpeg_on_error;
  err.mgr.emit_message = libjpeg_on_message;
  jpeg_create_decompress(&cinfo);
  bool sequential = false;
  if (setjmp(err.jump) == 0) {
    jpeg_mem_src(&cinfo, jpeg.data(), (unsigned long)jpeg.size());
    jpeg_read_header(&cinfo, TRUE);
    sequential = !cinfo.progressive_mode && !cinfo.arith_code;
  }
  jpeg_destroy_decompress(&cinfo);
  return sequential;
}

TEST(JpegFrameKind, SequentialHuffmanAsLibjpegReadsIt) {
  const Image photo = decode_image_file(photo_path("kite"), 169, 113);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> files = {
      {"baseline 4:2:0", encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, 0)},
      {"baseline 4:4:4", encode_jpeg(photo, TJPF_RGB, TJSAMP_444, 88, 0)},
      {"gray", encode_jpeg(gray_of(photo), TJPF_GRAY, TJSAMP_GRAY, 88, 0)},
      {"progressive", encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, TJFLAG_PROGRESSIVE)},
  };
  // An APP1 segment (EXIF-like) before the frame is stepped over.
  std::vector<uint8_t> with_app = files[0].second;
  const std::vector<uint8_t> app1 = {0xFF, 0xE1, 0x00, 0x08, 'E', 'x', 'i', 'f', 0, 0};
  with_app.insert(with_app.begin() + 2, app1.begin(), app1.end());
  files.push_back({"baseline after APP1", with_app});
  for (const auto& [name, jpeg] : files) {
    SCOPED_TRACE(name);
    ASSERT_EQ(is_sequential_huffman_jpeg(jpeg), libjpeg_says_sequential(jpeg));
    EXPECT_EQ(is_sequential_huffman_jpeg(jpeg), name != "progressive");
  }
  // Not JPEGs, and headers cut before the frame.
  EXPECT_FALSE(is_sequential_huffman_jpeg({}));
  EXPECT_FALSE(is_sequential_huffman_jpeg(std::vector<uint8_t>{0x89, 'P', 'N', 'G', 0x0D, 0x0A}));
  const std::vector<uint8_t>& prog = files[3].second;
  for (size_t n = 0; n < 200 && n < prog.size(); ++n)
    EXPECT_FALSE(is_sequential_huffman_jpeg(std::span(prog.data(), n))) << n;
  std::vector<uint8_t> junk = files[0].second;
  junk.insert(junk.begin() + 2, {0x12, 0x34});  // bytes where a marker belongs
  EXPECT_FALSE(is_sequential_huffman_jpeg(junk));
}

// Truncations and byte flips of a progressive file decoded at 1/8: each
// either decodes at the right size or throws tandem::Error naming the file;
// a truncated file is refused as the whole-file decoder refuses it.
TEST(JpegEighthScans, MutatedProgressiveFilesDecodeOrThrow) {
  const Image photo = decode_image_file(photo_path("scream"));
  const std::vector<uint8_t> prog = encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 88, TJFLAG_PROGRESSIVE);
  const Image good = decode_image(prog, eighth(true), "good");
  std::mt19937 rng(99);
  int decoded = 0, refused = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<uint8_t> b = prog;
    if (trial % 2 == 0) {
      b.resize(std::uniform_int_distribution<size_t>(1, b.size() - 1)(rng));
    } else {
      for (int k = 0; k <= trial % 4; ++k)
        b[std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng)] ^= uint8_t(1 + rng() % 255);
    }
    DecodeOptions opt = eighth(true);
    opt.accept_jpeg_warnings = trial % 3 == 0;
    try {
      const Image img = decode_image(b, opt, "mutant");
      EXPECT_TRUE(img.width > 0 && img.height > 0 && img.width <= 65535);
      if (trial % 2 == 0 && !opt.accept_jpeg_warnings)
        ADD_FAILURE() << "a truncated file decoded: " << b.size();
      ++decoded;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("mutant"), std::string::npos) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(refused, 0);
  const Image after = decode_image(prog, eighth(true), "good again");
  EXPECT_EQ(max_abs_diff(after.data(), good.data(), good.bytes()), 0);
}

namespace {

DecodeOptions quarter(bool coarse) {
  DecodeOptions o;
  o.min_width = o.min_height = 1;  // the smallest scale...
  o.skip_unread_scans = false;     // ...but not the exact 1/8 cut
  o.apply_orientation = false;
  o.coarse_progressive = coarse;
  return o;
}

}  // namespace

// The coarse cut at 1/4 (luma's AC refinement scans dropped) against
// libjpeg-turbo decoding every scan at the same scale, on darknet's photos
// made progressive by PIL (libjpeg's standard progression: two luma
// refinement scans). A floor on PSNR, not equality: the cut is lossy by design.
TEST(JpegCoarseScans, QuarterDecodeStaysCloseToEveryScanDecoded) {
  const ScratchDir scratch;
  for (const std::string& name : kDarknetPhotos) {
    SCOPED_TRACE(name);
    const fs::path f = scratch.path / (name + ".jpg");
    ASSERT_TRUE(run_python(scratch.path, "from PIL import Image\nImage.open('" + photo_path(name) +
                                             "').save('" + f.string() +
                                             "', quality=92, progressive=True)\n"));
    const std::vector<uint8_t> bytes = read_bytes(f);
    std::vector<uint8_t> cut;
    ASSERT_TRUE(copy_scans(bytes, cut, ScanCut::luma_coarse));
    EXPECT_LT(cut.size(), bytes.size() * 3 / 4) << "the refinement scans were not dropped";
    const JpegInfo info = read_jpeg_info(bytes);
    DecodeOptions coarse = quarter(true), exact = quarter(false);
    coarse.min_width = exact.min_width = (info.width + 3) / 4;  // 1/4 covers it, 1/8 does not
    const Image fast = decode_image(bytes, coarse, name);
    const Image whole = decode_image(bytes, exact, name);
    ASSERT_EQ(fast.width, (info.width + 3) / 4);
    ASSERT_EQ(fast.bytes(), whole.bytes());
    const double db = psnr(fast, whole);
    EXPECT_GT(db, 36.0);
    EXPECT_LT(db, 99.0) << "the same pixels: nothing was approximated";
  }
}

// Off by default; never above 1/4 scale; a baseline file has no scans to cut.
TEST(JpegCoarseScans, OnlyOnRequestAndAtQuarterScaleOrLess) {
  const Image photo = decode_image_file(photo_path("horses"));
  const std::vector<uint8_t> prog = encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 90, TJFLAG_PROGRESSIVE);
  const int w = (photo.width + 3) / 4;
  DecodeOptions def = quarter(false), on = quarter(true);
  def.coarse_progressive = DecodeOptions{}.coarse_progressive;
  def.min_width = on.min_width = w;
  const Image a = decode_image(prog, def, "default"), b = decode_image(prog, on, "coarse");
  ASSERT_EQ(a.bytes(), b.bytes());
  EXPECT_GT(max_abs_diff(a.data(), b.data(), a.bytes()), 0) << "the cut was not taken";
  DecodeOptions exact = quarter(false);
  exact.min_width = w;
  EXPECT_EQ(psnr(a, decode_image(prog, exact, "")), 99.0) << "default is every scan";
  DecodeOptions half = on;
  half.min_width = w + 8;  // needs 1/2 or 3/8: exact decode
  DecodeOptions half_exact = half;
  half_exact.coarse_progressive = false;
  const Image h1 = decode_image(prog, half, ""), h2 = decode_image(prog, half_exact, "");
  EXPECT_EQ(max_abs_diff(h1.data(), h2.data(), h1.bytes()), 0);
  std::vector<uint8_t> out;
  EXPECT_FALSE(copy_scans(encode_jpeg(photo, TJPF_RGB, TJSAMP_420, 90, 0), out, ScanCut::luma_coarse));
  // A file already cut has nothing left to drop.
  ASSERT_TRUE(copy_scans(prog, out, ScanCut::luma_coarse));
  std::vector<uint8_t> again;
  EXPECT_FALSE(copy_scans(out, again, ScanCut::luma_coarse));
}
