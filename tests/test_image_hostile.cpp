// Hostile and broken files: each must end in tandem::Error naming the file
// (or, for the mutation sweep, a successful decode), never a crash, abort or
// a huge allocation. Run under the normal test binary.
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <functional>
#include <random>

#include "core/error.h"
#include "image/decode.h"
#include "image/exif_orientation.h"
#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

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
  EXPECT_NE(e.find("not a JPEG, PNG, WebP or HEIF"), std::string::npos) << e;

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

// A chunk whose declared length runs past the end of the file (here a
// text chunk claiming 1.97 GB in 50 bytes, as fuzzing found) is refused
// before libpng allocates and zeroes that length: the error names the
// chunk, its claim and the file.
TEST(HostileFiles, PngChunkClaimingMoreThanTheFileIsRefusedFirst) {
  const ScratchDir scratch;
  std::vector<uint8_t> png = png_header_only(8, 11);
  put_be32(png, 1970102842u);
  png.insert(png.end(), {'i', 'T', 'X', 't', 'm', 'e', 0xbf, 0x0b});
  write_bytes(scratch.path / "claims.png", png.data(), png.size());
  const std::string e = decode_error(scratch.path / "claims.png");
  EXPECT_NE(e.find("claims.png"), std::string::npos) << e;
  EXPECT_NE(e.find("chunk 'iTXt' claims 1970102842 bytes"), std::string::npos) << e;
  EXPECT_THROW(read_png_text(png, "claims.png"), Error);
}

// Random truncations and byte flips of a small JPEG and PNG: each decode
// either succeeds with a sane size or throws tandem::Error. A crash, abort or
// any other exception fails the test (run it under ASan to catch more).
TEST(HostileFiles, MutatedFilesDecodeOrThrow) {
  const Image src = decode_image_file(photo_path("scream"), 44, 56);  // 1/8 scale: 44x56
  ASSERT_EQ(src.width, 44);
  const std::vector<std::vector<uint8_t>> originals = {
      encode_jpeg(src, TJPF_RGB, TJSAMP_420, 85, TJFLAG_PROGRESSIVE), encode_png(src)};
  ASSERT_FALSE(originals[0].empty());
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

// ---------------------------------------------------------------------------
// Hostile EXIF. The Orientation tag is read from untrusted bytes on every
// JPEG decode; whatever the APP1 segment holds, the answer is 1..8 (1 for
// anything malformed), never a crash, hang or out-of-bounds read, and the
// image itself still decodes.

namespace {

struct IfdEntry {
  uint16_t tag, type;
  uint32_t count, value;  // value: the 4-byte field; SHORTs left-justified
};
constexpr uint16_t kShort = 3, kLong = 4, kAscii = 2;
constexpr uint16_t kOrientationTag = 0x0112, kExifIfdTag = 0x8769;

// TIFF-structured EXIF as the spec lays it out: byte order, 42, the IFD0
// offset, then IFD0 at byte 8 (whatever ifd0_offset claims) holding
// `entries` (claimed_count of them, default the real number) and a next-IFD
// offset.
struct TiffWriter {
  bool big_endian = true;
  std::vector<uint8_t> bytes;
  void u16(uint32_t v) {
    if (big_endian) bytes.insert(bytes.end(), {uint8_t(v >> 8), uint8_t(v)});
    else bytes.insert(bytes.end(), {uint8_t(v), uint8_t(v >> 8)});
  }
  void u32(uint32_t v) {
    if (big_endian) u16(v >> 16), u16(v & 0xFFFF);
    else u16(v & 0xFFFF), u16(v >> 16);
  }
};

std::vector<uint8_t> tiff_exif(bool big_endian, const std::vector<IfdEntry>& entries,
                               uint32_t ifd0_offset = 8, int claimed_count = -1,
                               uint32_t next_ifd = 0) {
  TiffWriter w{big_endian, {}};
  w.bytes = big_endian ? std::vector<uint8_t>{'M', 'M'} : std::vector<uint8_t>{'I', 'I'};
  w.u16(42);
  w.u32(ifd0_offset);
  w.u16(claimed_count < 0 ? uint32_t(entries.size()) : uint32_t(claimed_count));
  for (const IfdEntry& e : entries) {
    w.u16(e.tag);
    w.u16(e.type);
    w.u32(e.count);
    if (e.type == kShort && e.count == 1) w.u16(e.value), w.u16(0);
    else w.u32(e.value);
  }
  w.u32(next_ifd);
  return w.bytes;
}

std::vector<uint8_t> orientation_tiff(bool big_endian, uint32_t value) {
  return tiff_exif(big_endian, {{kOrientationTag, kShort, 1, value}});
}

std::vector<uint8_t> exif_payload(const std::vector<uint8_t>& tiff) {
  std::vector<uint8_t> p(6 + tiff.size());
  std::memcpy(p.data(), "Exif\0\0", 6);
  std::copy(tiff.begin(), tiff.end(), p.begin() + 6);
  return p;
}

std::vector<uint8_t> segment(uint8_t marker, const std::vector<uint8_t>& payload) {
  const size_t length = payload.size() + 2;  // counts itself
  std::vector<uint8_t> s(2 + length);
  s[0] = 0xFF, s[1] = marker, s[2] = uint8_t(length >> 8), s[3] = uint8_t(length);
  std::copy(payload.begin(), payload.end(), s.begin() + 4);
  return s;
}

// A 24x16 gradient JPEG from TurboJPEG (no APPn segments of its own but JFIF).
std::vector<uint8_t> small_jpeg() {
  Image img(24, 16, 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 24; ++x) {
      uint8_t* p = img.row(y) + 3 * x;
      p[0] = uint8_t(x * 10), p[1] = uint8_t(y * 15), p[2] = uint8_t((x + y) * 5);
    }
  return encode_jpeg(img, TJPF_RGB, TJSAMP_444, 90, 0);
}

// `jpeg` with `segments` inserted right after SOI.
std::vector<uint8_t> with_segments(const std::vector<uint8_t>& jpeg,
                                   const std::vector<std::vector<uint8_t>>& segments) {
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  for (const auto& s : segments) out.insert(out.end(), s.begin(), s.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

std::vector<uint8_t> with_exif(const std::vector<uint8_t>& jpeg, const std::vector<uint8_t>& tiff) {
  return with_segments(jpeg, {segment(0xE1, exif_payload(tiff))});
}

// Decodes `jpeg`, which must succeed, and checks the result agrees with
// the orientation read on its own.
void expect_decodes_as(const std::vector<uint8_t>& jpeg, int orientation) {
  EXPECT_EQ(read_jpeg_orientation(jpeg), orientation);
  const Image img = decode_image(jpeg, {}, "exif.jpg");
  EXPECT_EQ(img.orientation, orientation);
  EXPECT_EQ(img.width, orientation >= 5 ? 16 : 24);
}

}  // namespace

// The hand-built EXIF of the tests below is read as written, so a 1 below
// means "refused", not "never found".
TEST(HostileExif, HandBuiltTagIsRead) {
  const std::vector<uint8_t> jpg = small_jpeg();
  expect_decodes_as(with_exif(jpg, orientation_tiff(true, 6)), 6);
  expect_decodes_as(with_exif(jpg, orientation_tiff(false, 3)), 3);
  expect_decodes_as(with_exif(jpg, tiff_exif(true, {{kOrientationTag, kLong, 1, 8}})), 8);
  expect_decodes_as(jpg, 1);  // no EXIF at all
}

TEST(HostileExif, BadValuesAndStructureReadAsOne) {
  const std::vector<uint8_t> jpg = small_jpeg();
  for (uint32_t v : {0u, 9u, 0xFFFFu}) expect_decodes_as(with_exif(jpg, orientation_tiff(true, v)), 1);
  const std::vector<std::vector<uint8_t>> refused = {
      tiff_exif(true, {{kOrientationTag, kAscii, 1, 6}}),
      tiff_exif(true, {{kOrientationTag, kShort, 0, 6}}),
      tiff_exif(true, {{kOrientationTag, kShort, 3, 0xFFFFFF00}}),  // values far past the end
      tiff_exif(true, {{kOrientationTag, kShort, 0x40000000, 8}}),  // count * size overflows
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}}, 0xFFFFFFF0),  // IFD0 offsets past the end
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}}, 0x7FFFFFFF),
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}}, 4000),
      tiff_exif(false, {{kOrientationTag, kShort, 1, 6}}, 0xFFFFFFFA),
  };
  for (size_t i = 0; i < refused.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_decodes_as(with_exif(jpg, refused[i]), 1);
  }
  std::vector<uint8_t> bad_order = orientation_tiff(true, 6);
  bad_order[0] = bad_order[1] = 'X';
  expect_decodes_as(with_exif(jpg, bad_order), 1);
  std::vector<uint8_t> bad_magic = orientation_tiff(true, 6);
  bad_magic[3] = 43;
  expect_decodes_as(with_exif(jpg, bad_magic), 1);
}

// Structures that a careless reader follows forever or past the end; the
// orientation entry itself is valid, so 6 is as right as 1 as long as
// nothing breaks.
TEST(HostileExif, LoopsAndOverlongCountsStayInBounds) {
  const std::vector<uint8_t> jpg = small_jpeg();
  const std::vector<std::vector<uint8_t>> cases = {
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}}, 8, 0xFFFF),  // 65535 entries claimed
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}}, 8, -1, 8),   // IFD1 is IFD0
      tiff_exif(true, {{kOrientationTag, kShort, 1, 6}, {kExifIfdTag, kLong, 1, 8}}),  // sub-IFD is IFD0
      tiff_exif(false, {{kExifIfdTag, kLong, 1, 8}, {kOrientationTag, kShort, 1, 6}}, 8, -1, 8),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const std::vector<uint8_t> file = with_exif(jpg, cases[i]);
    const int o = read_jpeg_orientation(file);
    EXPECT_TRUE(o == 1 || o == 6) << o;
    expect_decodes_as(file, o);
  }
}

// Every truncation of a valid payload: 1 until the whole orientation entry
// is there, never anything but 1 or 6.
TEST(HostileExif, TruncatedPayloads) {
  const std::vector<uint8_t> full = exif_payload(orientation_tiff(true, 6));
  const size_t entry_end = 6 + 8 + 2 + 12;
  for (size_t n = 0; n <= full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + std::ptrdiff_t(n));
    const int o = orientation_from_exif(cut);
    if (n < entry_end) {
      EXPECT_EQ(o, 1) << n;
    }
    EXPECT_TRUE(o == 1 || o == 6) << n;
  }
  EXPECT_EQ(orientation_from_exif(full), 6);
}

TEST(HostileExif, BrokenApp1Segments) {
  const std::vector<uint8_t> jpg = small_jpeg();
  const std::vector<uint8_t> exif = exif_payload(orientation_tiff(true, 6));
  const std::vector<uint8_t> xmp = {'h', 't', 't', 'p', ':', '/', '/', 'n', 's', 0};
  // Found behind other APPn segments, an XMP APP1 and fill bytes.
  std::vector<uint8_t> filled = segment(0xE1, exif);
  filled.insert(filled.begin(), {0xFF, 0xFF, 0xFF});
  expect_decodes_as(with_segments(jpg, {segment(0xE0, {1, 2, 3}), segment(0xE1, xmp), filled}), 6);
  // Not APP1, not "Exif\0\0", or only the header: no orientation.
  expect_decodes_as(with_segments(jpg, {segment(0xE2, exif)}), 1);
  std::vector<uint8_t> no_nuls = exif;
  no_nuls[5] = 'X';
  expect_decodes_as(with_segments(jpg, {segment(0xE1, no_nuls)}), 1);
  expect_decodes_as(with_segments(jpg, {segment(0xE1, {'E', 'x', 'i', 'f', 0, 0})}), 1);
  // After SOS the walk stops: EXIF appended after the image is not read.
  std::vector<uint8_t> trailing = jpg;
  const std::vector<uint8_t> late = segment(0xE1, exif);
  trailing.insert(trailing.end(), late.begin(), late.end());
  EXPECT_EQ(read_jpeg_orientation(trailing), 1);

  // A segment length past the end of the file, or shorter than itself.
  for (uint16_t length : {uint16_t(0xFFFF), uint16_t(0), uint16_t(1)}) {
    std::vector<uint8_t> bad = with_exif(jpg, orientation_tiff(true, 6));
    bad[4] = uint8_t(length >> 8), bad[5] = uint8_t(length);
    EXPECT_EQ(read_jpeg_orientation(bad), 1) << length;
    EXPECT_TRUE(find_jpeg_exif(bad).empty()) << length;
    try {
      decode_image(bad, {}, "badlen.jpg");  // libjpeg may or may not resync; either is fine
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("badlen.jpg"), std::string::npos) << e.what();
    }
  }
  // Every prefix of the file: 1 until the whole APP1 segment is there.
  const std::vector<uint8_t> file = with_exif(jpg, orientation_tiff(true, 6));
  const size_t app1_end = 2 + 4 + exif.size();
  for (size_t n = 0; n <= file.size(); ++n) {
    const std::span<const uint8_t> prefix(file.data(), n);
    EXPECT_EQ(read_jpeg_orientation(prefix), n < app1_end ? 1 : 6) << n;
  }
  // Junk: no JPEG markers at all.
  std::vector<uint8_t> junk = {0xFF, 0xD8};
  std::mt19937 rng(5);
  for (int i = 0; i < 4096; ++i) junk.push_back(uint8_t(rng()));
  const int o = read_jpeg_orientation(junk);
  EXPECT_TRUE(o >= 1 && o <= 8);
}

// Random byte flips and cuts inside the EXIF payload of a real camera file
// (kite.jpg: big-endian, sub-IFDs, maker-note tags) and of a hand-built one
// with orientation 6, transplanted into a small JPEG: every decode succeeds
// with an orientation 1..8 and the matching size, or ends in tandem::Error.
TEST(HostileFiles, MutatedExifDecodesOrThrows) {
  const std::vector<uint8_t> jpg = small_jpeg();
  const std::vector<uint8_t> kite = read_bytes(photo_path("kite"));
  const std::span<const uint8_t> camera = find_jpeg_exif(kite);
  ASSERT_GT(camera.size(), 500u);
  const std::vector<std::vector<uint8_t>> payloads = {
      std::vector<uint8_t>(camera.begin(), camera.end()),
      exif_payload(tiff_exif(true, {{0x010F, kAscii, 6, 20},  // Make: any 6 bytes inside IFD0
                                    {kOrientationTag, kShort, 1, 6},
                                    {kExifIfdTag, kLong, 1, 8}},
                             8, -1, 8))};
  std::mt19937 rng(4321);
  int decoded = 0, refused = 0, rotated = 0;
  for (const auto& original : payloads) {
    for (int trial = 0; trial < 600; ++trial) {
      std::vector<uint8_t> p = original;
      if (trial % 3 == 0) {
        p.resize(std::uniform_int_distribution<size_t>(0, p.size() - 1)(rng));
      } else {
        for (int k = 0; k <= trial % 4; ++k) {
          // Leave "Exif\0\0" mostly alone, or libexif stops before the TIFF data.
          const size_t lo = trial % 10 == 1 ? 0 : 6;
          p[std::uniform_int_distribution<size_t>(lo, p.size() - 1)(rng)] ^= uint8_t(1 + rng() % 255);
        }
      }
      const std::vector<uint8_t> file = with_segments(jpg, {segment(0xE1, p)});
      const int o = read_jpeg_orientation(file);
      EXPECT_TRUE(o >= 1 && o <= 8) << o;
      try {
        const Image img = decode_image(file, {}, "mutant");
        EXPECT_EQ(img.orientation, o);
        EXPECT_EQ(img.width, o >= 5 ? 16 : 24);
        ++decoded;
        rotated += o != 1;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mutant"), std::string::npos) << e.what();
        ++refused;
      }
    }
  }
  std::printf("EXIF mutation sweep: %d decoded (%d rotated), %d refused\n", decoded, rotated, refused);
  EXPECT_GT(decoded, 0);
  EXPECT_GT(rotated, 0);
}
