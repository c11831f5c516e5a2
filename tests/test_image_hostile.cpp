// Hostile and broken files: each must end in tandem::Error naming the file
// (or, for the mutation sweep, a successful decode), never a crash, abort or
// a huge allocation. Run under the normal test binary.
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <functional>
#include <random>

#include "core/error.h"
#include "image/decode.h"
#include "image/jpeg_decoder.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no tandem::Error)";
}

std::string decode_error(const fs::path& p, const DecodeOptions& opt = {}) {
  return error_of([&] { decode_image_file(p.string(), opt); });
}

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(uint8_t(x >> s));
}

// A PNG signature and IHDR (8-bit RGB) claiming width x height, no pixel data.
std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height) {
  std::vector<uint8_t> v = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  put_be32(v, 13);
  const size_t type_at = v.size();
  v.insert(v.end(), {'I', 'H', 'D', 'R'});
  put_be32(v, width);
  put_be32(v, height);
  v.insert(v.end(), {8, 2, 0, 0, 0});
  put_be32(v, crc32(v.data() + type_at, v.size() - type_at));
  return v;
}

// A small RGB PNG made with libpng's simplified writer.
std::vector<uint8_t> encode_png(const Image& img) {
  png_image pi{};
  pi.version = PNG_IMAGE_VERSION;
  pi.width = png_uint_32(img.width);
  pi.height = png_uint_32(img.height);
  pi.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&pi, nullptr, &size, 0, img.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&pi, out.data(), &size, 0, img.data(), 0, nullptr));
  out.resize(size);
  return out;
}

}  // namespace

TEST(HostileFiles, EmptyTextAndMissingFiles) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  write_bytes(dir / "empty.jpg", "", 0);
  std::string e = decode_error(dir / "empty.jpg");
  EXPECT_NE(e.find("empty.jpg"), std::string::npos) << e;
  EXPECT_NE(e.find("empty"), std::string::npos) << e;

  const std::string text = "this is not a picture\n";
  write_bytes(dir / "notes.jpg", text.data(), text.size());
  e = decode_error(dir / "notes.jpg");
  EXPECT_NE(e.find("notes.jpg"), std::string::npos) << e;
  EXPECT_NE(e.find("not a JPEG or PNG"), std::string::npos) << e;

  write_bytes(dir / "anim.jpg", "GIF89a\x01\x00", 8);
  EXPECT_NE(decode_error(dir / "anim.jpg").find("GIF"), std::string::npos);

  EXPECT_NE(decode_error(dir / "missing.jpg").find("cannot open"), std::string::npos);
  EXPECT_NE(decode_error(dir).find("not a regular file"), std::string::npos);
  // Straight to the JPEG/PNG decoders, bypassing the sniffing.
  EXPECT_THROW(decode_jpeg(std::span<const uint8_t>()), Error);
  const std::vector<uint8_t> junk(text.begin(), text.end());
  EXPECT_THROW(decode_jpeg(junk), Error);
}

TEST(HostileFiles, TruncatedJpeg) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::vector<uint8_t> full = read_bytes(photo_path("dog"));
  write_bytes(dir / "half.jpg", full.data(), full.size() * 6 / 10);
  std::string e = decode_error(dir / "half.jpg");
  EXPECT_NE(e.find("half.jpg"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  // Opting in to libjpeg's warnings gives the image with the missing part gray.
  DecodeOptions lenient;
  lenient.accept_jpeg_warnings = true;
  EXPECT_EQ(decode_image_file((dir / "half.jpg").string(), lenient).width, 768);
  // Header cut short: not even the frame size is there.
  write_bytes(dir / "head.jpg", full.data(), 100);
  EXPECT_NE(decode_error(dir / "head.jpg").find("head.jpg"), std::string::npos);
}

// The per-thread TurboJPEG handle must be usable after any failure; with
// libjpeg-turbo 2.1 a failed header read leaves it in a state that rejects
// the next valid file unless it is reset.
TEST(HostileFiles, GoodFileDecodesAfterBadOne) {
  const std::vector<uint8_t> good = read_bytes(photo_path("person"));
  std::vector<uint8_t> bad_header(good.begin(), good.begin() + 300);
  std::vector<uint8_t> bad_table = good;
  for (size_t i = 0; i + 1 < bad_table.size(); ++i) {
    if (bad_table[i] == 0xFF && bad_table[i + 1] == 0xC4) {  // DHT: claim 255 codes of length 1
      bad_table[i + 5] = 0xFF;
      break;
    }
  }
  for (const auto* bad : {&bad_header, &bad_table}) {
    EXPECT_THROW(decode_jpeg(*bad), Error);
    EXPECT_EQ(decode_jpeg(good).width, 640);
    EXPECT_THROW(read_jpeg_info(*bad), Error);
    EXPECT_EQ(read_jpeg_info(good).height, 424);
  }
}

TEST(HostileFiles, OversizedHeadersRefusedBeforeAllocating) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::vector<uint8_t> bomb = png_header_only(100000, 100000);
  write_bytes(dir / "bomb.png", bomb.data(), bomb.size());
  std::string e = decode_error(dir / "bomb.png");
  EXPECT_NE(e.find("bomb.png"), std::string::npos) << e;
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;

  // A real JPEG whose SOF0 frame header is patched to claim 65000x65000.
  std::vector<uint8_t> jpg = read_bytes(photo_path("dog"));
  size_t sof = 2;
  while (sof + 9 < jpg.size() && !(jpg[sof] == 0xFF && jpg[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 9, jpg.size());
  for (size_t at : {sof + 5, sof + 7}) jpg[at] = 0xFD, jpg[at + 1] = 0xE8;  // 65000, big-endian
  write_bytes(dir / "bomb.jpg", jpg.data(), jpg.size());
  e = decode_error(dir / "bomb.jpg");
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;

  // The limit is configurable: the 768x576 dog is refused under 400k pixels.
  DecodeOptions strict;
  strict.max_pixels = 400000;
  EXPECT_NE(decode_error(photo_path("dog"), strict).find("442368 pixels"), std::string::npos);
  strict.max_file_bytes = 1000;
  EXPECT_NE(decode_error(photo_path("dog"), strict).find("bytes, over the limit"), std::string::npos);
}

TEST(HostileFiles, TruncatedPng) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::vector<uint8_t> png = encode_png(decode_image_file(photo_path("person")));
  for (size_t cut : {size_t(8), size_t(20), size_t(40), png.size() / 2, png.size() - 13}) {
    write_bytes(dir / "cut.png", png.data(), cut);
    std::string e = decode_error(dir / "cut.png");
    EXPECT_NE(e.find("cut.png"), std::string::npos) << "cut at " << cut << ": " << e;
  }
}

// Random truncations and byte flips of a small JPEG and PNG: each decode
// either succeeds with a sane size or throws tandem::Error. A crash, abort or
// any other exception fails the test (run it under ASan to catch more).
TEST(HostileFiles, MutatedFilesDecodeOrThrow) {
  const Image src = decode_image_file(photo_path("scream"), 44, 56);  // 1/8 scale: 44x56
  ASSERT_EQ(src.width, 44);
  tjhandle tj = tjInitCompress();
  ASSERT_NE(tj, nullptr);
  unsigned char* jpg = nullptr;
  unsigned long jpg_size = 0;
  ASSERT_EQ(tjCompress2(tj, src.data(), src.width, 0, src.height, TJPF_RGB, &jpg, &jpg_size,
                        TJSAMP_420, 85, TJFLAG_PROGRESSIVE), 0);
  const std::vector<std::vector<uint8_t>> originals = {std::vector<uint8_t>(jpg, jpg + jpg_size),
                                                       encode_png(src)};
  tjFree(jpg);
  tjDestroy(tj);
  std::mt19937 rng(1234);
  int decoded = 0, refused = 0;
  for (const auto& original : originals) {
    for (int trial = 0; trial < 400; ++trial) {
      // Even trials cut the file short; odd ones flip 1-4 bytes anywhere.
      std::vector<uint8_t> b = original;
      if (trial % 2 == 0) {
        b.resize(std::uniform_int_distribution<size_t>(1, b.size() - 1)(rng));
      } else {
        for (int k = 0; k <= trial % 4; ++k) {
          b[std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng)] ^= uint8_t(1 + rng() % 255);
        }
      }
      DecodeOptions opt;
      opt.accept_jpeg_warnings = trial % 3 == 0;  // the lenient path must be as safe
      try {
        const Image img = decode_image(b, opt, "mutant");
        EXPECT_TRUE(img.width > 0 && img.height > 0 && img.width <= 65535);
        ++decoded;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mutant"), std::string::npos) << e.what();
        ++refused;
      }
    }
  }
  // A bad file must not poison this thread's decoder for the next good one.
  EXPECT_EQ(decode_image(originals[0], {}, "original").width, 44);
  std::printf("mutation sweep: %d decoded, %d refused with tandem::Error\n", decoded, refused);
  EXPECT_GT(refused, 0);
  EXPECT_GT(decoded, 0);
}
