// WebP (libwebp) and HEIF/AVIF (libheif) decoding. References: PIL
// (Debian's python3-pil, linking the same libwebp 1.2.4) for WebP; for HEIF
// the source pixels of lossless files, PIL's exif_transpose for the
// orientation libheif applies, and libheif's own heif-convert
// (libheif-examples) for lossy files. Each test names its tolerance.
#include <gtest/gtest.h>
#include <libheif/heif.h>

#include <cstdlib>
#include <random>

#include "core/error.h"
#include "image/decode.h"
#include "image/heif_decoder.h"
#include "image/webp_decoder.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

// Largest byte difference between `img` and a raw reference file, 256 on a
// size mismatch.
int diff_vs_raw(const Image& img, const fs::path& raw) {
  const std::vector<uint8_t> ref = read_bytes(raw);
  EXPECT_EQ(ref.size(), img.bytes()) << raw << ": decoded " << img.width << "x" << img.height;
  if (ref.size() != img.bytes()) return 256;
  return max_abs_diff(img.data(), ref.data(), ref.size());
}

// Runs a PIL script in `dir` that starts with `im`: a darknet photo as RGB,
// resized to width x height.
bool run_pil_on_photo(const fs::path& dir, const std::string& photo, int width, int height,
                      const std::string& code) {
  return run_python(dir, "from PIL import Image, ImageOps\nim = Image.open('" + photo_path(photo) +
                             "').convert('RGB').resize((" + std::to_string(width) + ", " +
                             std::to_string(height) + "))\n" + code);
}

bool run_command(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()) == 0; }

void check_heif(heif_error err) { ASSERT_EQ(err.code, heif_error_Ok) << err.message; }

heif_error append_bytes(heif_context*, const void* data, size_t size, void* userdata) {
  auto* out = static_cast<std::vector<uint8_t>*>(userdata);
  out->insert(out->end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  return heif_error{heif_error_Ok, heif_suberror_Unspecified, "ok"};
}

// `rgb` as a lossless HEIC (HEVC, 4:4:4, RGB stored as GBR) whose irot/imir
// boxes say `orientation` (EXIF numbering), written by libheif's encoder.
void encode_lossless_heic(const Image& rgb, int orientation, std::vector<uint8_t>& out) {
  heif_init(nullptr);
  heif_context* ctx = heif_context_alloc();
  heif_encoder* enc = nullptr;
  check_heif(heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &enc));
  check_heif(heif_encoder_set_lossless(enc, 1));
  check_heif(heif_encoder_set_parameter(enc, "chroma", "444"));
  heif_image* img = nullptr;
  check_heif(heif_image_create(rgb.width, rgb.height, heif_colorspace_RGB, heif_chroma_444, &img));
  const heif_channel planes[3] = {heif_channel_R, heif_channel_G, heif_channel_B};
  for (int c = 0; c < 3; ++c) {
    check_heif(heif_image_add_plane(img, planes[c], rgb.width, rgb.height, 8));
    int stride = 0;
    uint8_t* p = heif_image_get_plane(img, planes[c], &stride);
    for (int y = 0; y < rgb.height; ++y) {
      for (int x = 0; x < rgb.width; ++x) p[y * stride + x] = rgb.row(y)[3 * x + c];
    }
  }
  heif_color_profile_nclx* nclx = heif_nclx_color_profile_alloc();
  nclx->matrix_coefficients = heif_matrix_coefficients_RGB_GBR;
  nclx->full_range_flag = 1;
  check_heif(heif_image_set_nclx_color_profile(img, nclx));
  heif_encoding_options* options = heif_encoding_options_alloc();
  options->image_orientation = heif_orientation(orientation);
  check_heif(heif_context_encode_image(ctx, img, enc, options, nullptr));
  heif_writer writer{1, append_bytes};
  out.clear();
  check_heif(heif_context_write(ctx, &writer, &out));
  heif_encoding_options_free(options);
  heif_nclx_color_profile_free(nclx);
  heif_image_release(img);
  heif_encoder_release(enc);
  heif_context_free(ctx);
}

// The primary image's luma bit depth, as libheif reads the file.
int luma_bits(const std::vector<uint8_t>& heif) {
  heif_context* ctx = heif_context_alloc();
  heif_image_handle* handle = nullptr;
  int bits = -1;
  if (heif_context_read_from_memory_without_copy(ctx, heif.data(), heif.size(), nullptr).code == heif_error_Ok &&
      heif_context_get_primary_image_handle(ctx, &handle).code == heif_error_Ok) {
    bits = heif_image_handle_get_luma_bits_per_pixel(handle);
    heif_image_handle_release(handle);
  }
  heif_context_free(ctx);
  return bits;
}

// A WebP lossless (VP8L) header claiming width x height, no image data.
std::vector<uint8_t> vp8l_header_only(uint32_t width, uint32_t height) {
  std::vector<uint8_t> v = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L'};
  const uint32_t bits = (width - 1) | (height - 1) << 14;  // then alpha hint 0, version 0
  const uint8_t chunk[] = {5, 0, 0, 0, 0x2f, uint8_t(bits), uint8_t(bits >> 8), uint8_t(bits >> 16),
                           uint8_t(bits >> 24), 0};
  v.insert(v.end(), std::begin(chunk), std::end(chunk));
  const uint32_t riff = uint32_t(v.size() - 8);
  for (int i = 0; i < 4; ++i) v[size_t(4 + i)] = uint8_t(riff >> (8 * i));
  return v;
}

// Random truncations and byte flips of `good`: each decodes to a non-empty
// image or throws tandem::Error; a crash or any other exception fails the
// test (run it under ASan to catch more).
using Decoder = void (*)(Image&, std::span<const uint8_t>, const DecodeOptions&, std::string_view);
void expect_mutations_decode_or_throw(const std::vector<uint8_t>& good, Decoder decode, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  int refused = 0;
  Image img;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bad = good;
    if (i % 3 == 0) bad.resize(pick(1, bad.size() - 1));
    for (int k = 0; k < 1 + i % 4; ++k) bad[pick(0, bad.size() - 1)] ^= uint8_t(1 + rng() % 255);
    try {
      decode(img, bad, {}, "<mutated>");
      EXPECT_GT(img.width, 0);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace

// Reference: PIL Image.open(p).convert("RGB") (first frame for an
// animation; alpha dropped), ImageOps.exif_transpose for the EXIF file.
// Same libwebp underneath, so the tolerance is 0.
TEST(WebpDecode, MatchesPil) {
  const ScratchDir scratch;
  const std::string d = scratch.path.string() + "/";
  ASSERT_TRUE(run_pil_on_photo(scratch.path, "dog", 301, 203,
      "im.save('" + d + "lossy.webp', quality=80)\n"
      "im.save('" + d + "lossless.webp', lossless=True)\n"
      "a = im.copy(); a.putalpha(Image.linear_gradient('L').resize(im.size))\n"
      "a.save('" + d + "alpha.webp', quality=80)\n"
      "a.save('" + d + "alpha_lossless.webp', lossless=True)\n"
      "im.save('" + d + "anim.webp', save_all=True, append_images=[im.rotate(180)], duration=100)\n"
      "ex = Image.Exif(); ex[0x0112] = 6\n"
      "im.save('" + d + "exif6.webp', quality=80, exif=ex.tobytes())\n"
      "for f in ['lossy', 'lossless', 'alpha', 'alpha_lossless', 'anim', 'exif6']:\n"
      "    p = '" + d + "' + f + '.webp'\n"
      "    open(p + '.raw', 'wb').write(Image.open(p).convert('RGB').tobytes())\n"
      "p = '" + d + "exif6.webp'\n"
      "open(p + '.upright', 'wb').write(ImageOps.exif_transpose(Image.open(p)).convert('RGB').tobytes())\n"));
  for (const char* f : {"lossy", "lossless", "alpha", "alpha_lossless", "anim"}) {
    const fs::path p = d + f + ".webp";
    ASSERT_EQ(sniff_format(read_bytes(p)), ImageFormat::webp) << f;
    const Image img = decode_image_file(p.string());
    EXPECT_EQ(img.channels, 3) << f;
    EXPECT_EQ(img.width, 301) << f;
    EXPECT_EQ(img.full_height, 203) << f;
    EXPECT_EQ(diff_vs_raw(img, p.string() + ".raw"), 0) << f;
  }
  const fs::path exif6 = d + "exif6.webp";
  const Image upright = decode_image_file(exif6.string());
  EXPECT_EQ(upright.orientation, 6);
  EXPECT_EQ(upright.width, 203);
  EXPECT_EQ(upright.full_width, 203);
  EXPECT_EQ(diff_vs_raw(upright, exif6.string() + ".upright"), 0);
  DecodeOptions as_stored;
  as_stored.apply_orientation = false;
  const Image stored = decode_image_file(exif6.string(), as_stored);
  EXPECT_EQ(stored.orientation, 1);
  EXPECT_EQ(diff_vs_raw(stored, exif6.string() + ".raw"), 0);
}

TEST(WebpDecode, HostileFiles) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  ASSERT_TRUE(run_python(dir, "from PIL import Image\n"
                              "Image.open('" + photo_path("person") + "').save('" +
                              (dir / "person.webp").string() + "', quality=80)\n"));
  const std::vector<uint8_t> good = read_bytes(dir / "person.webp");
  // Truncated: cut in the bitstream, and inside the header.
  for (size_t cut : {good.size() / 2, size_t(20)}) {
    write_bytes(dir / "cut.webp", good.data(), cut);
    const std::string e = error_of([&] { decode_image_file((dir / "cut.webp").string()); });
    EXPECT_NE(e.find("cut.webp"), std::string::npos) << e;
    EXPECT_NE(e.find("WebP"), std::string::npos) << e;
  }
  // A header claiming 16384 x 16384 (the format's maximum) is refused before
  // allocating 800 MB; so is a real file under a strict limit.
  const std::vector<uint8_t> bomb = vp8l_header_only(16384, 16384);
  write_bytes(dir / "bomb.webp", bomb.data(), bomb.size());
  std::string e = error_of([&] { decode_image_file((dir / "bomb.webp").string()); });
  EXPECT_NE(e.find("16384x16384 = 268435456 pixels, over the limit"), std::string::npos) << e;
  DecodeOptions strict;
  strict.max_pixels = 1000;
  e = error_of([&] { decode_image_file((dir / "person.webp").string(), strict); });
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;
  Image img;
  EXPECT_NE(error_of([&] { decode_webp_into(img, {}); }).find("empty"), std::string::npos);

  expect_mutations_decode_or_throw(good, decode_webp_into, 99);
}

// Lossless HEIC with each of the 8 orientations as irot/imir boxes.
// References: the source pixels (PIL-written PNG, which our PNG decoder
// reads exactly) turned upright by PIL's ImageOps.exif_transpose for the
// same EXIF value. Lossless RGB, so the tolerance is 0.
TEST(HeifDecode, LosslessOrientationsMatchPilExifTranspose) {
  const ScratchDir scratch;
  const std::string d = scratch.path.string() + "/";
  ASSERT_TRUE(run_pil_on_photo(scratch.path, "giraffe", 64, 48,
      "im.save('" + d + "src.png')\n"
      "for o in range(1, 9):\n"
      "    ex = Image.Exif(); ex[0x0112] = o\n"
      "    im.save('" + d + "o%d.png' % o, exif=ex.tobytes())\n"
      "    up = ImageOps.exif_transpose(Image.open('" + d + "o%d.png' % o))\n"
      "    open('" + d + "o%d.raw' % o, 'wb').write(up.convert('RGB').tobytes())\n"));
  const Image src = decode_image_file(d + "src.png");
  std::vector<uint8_t> heic;
  for (int o = 1; o <= 8; ++o) {
    encode_lossless_heic(src, o, heic);
    ASSERT_EQ(sniff_format(heic), ImageFormat::heif);
    const Image img = decode_image(heic);
    EXPECT_EQ(img.orientation, 1) << o;
    EXPECT_EQ(img.full_width, o >= 5 ? 48 : 64) << o;
    EXPECT_EQ(img.full_height, o >= 5 ? 64 : 48) << o;
    EXPECT_EQ(diff_vs_raw(img, d + "o" + std::to_string(o) + ".raw"), 0) << "orientation " << o;
    DecodeOptions as_stored;
    as_stored.apply_orientation = false;
    EXPECT_EQ(diff_vs_raw(decode_image(heic, as_stored), d + "o1.raw"), 0) << "stored, orientation " << o;
  }
}

// Lossy HEIC and AVIF (4:2:0) written by heif-enc, and a 10-bit HEIC from
// a 16-bit PNG. Reference: heif-convert (libheif-examples) to PNG, read by
// PIL (the high byte of the 16-bit PNG it writes for 10 bits); tolerance 0,
// as both ask libheif for RGB. Sanity against the source: mean difference
// under 3 levels.
TEST(HeifDecode, LossyHeicAndAvifMatchHeifConvert) {
  const ScratchDir scratch;
  const std::string d = scratch.path.string() + "/";
  ASSERT_TRUE(run_pil_on_photo(scratch.path, "horses", 300, 200,
      "im.info = {}\n"
      "im.save('" + d + "src.png')\n"
      "open('" + d + "src.raw', 'wb').write(im.tobytes())\n"
      // The same pixels as a 16-bit PNG (v * 257), written by hand: PIL cannot.
      "import numpy as np, struct, zlib\n"
      "x = np.asarray(im).astype('>u2') * 257\n"
      "raw = b''.join(b'\\0' + r.tobytes() for r in x)\n"
      "def chunk(t, b): return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b))\n"
      "open('" + d + "src16.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n'"
      " + chunk(b'IHDR', struct.pack('>IIBBBBB', 300, 200, 16, 2, 0, 0, 0))"
      " + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"));
  ASSERT_TRUE(run_command("heif-enc -q 90 " + d + "src.png -o " + d + "photo.heic"))
      << "needs heif-enc (Debian libheif-examples)";
  ASSERT_TRUE(run_command("heif-enc -A -q 90 " + d + "src.png -o " + d + "photo.avif"));
  ASSERT_TRUE(run_command("heif-enc -b 10 -q 90 " + d + "src16.png -o " + d + "photo.hdr"));
  for (const char* f : {"heic", "avif", "hdr"}) {
    ASSERT_TRUE(run_command("heif-convert " + d + "photo." + f + " " + d + f + ".png")) << f;
  }
  ASSERT_TRUE(run_python(scratch.path,
      "from PIL import Image\n"
      "for f in ['heic', 'avif', 'hdr']:\n"
      "    open('" + d + "' + f + '.raw', 'wb').write(Image.open('" + d + "' + f + '.png').convert('RGB').tobytes())\n"));
  ASSERT_TRUE(heif_have_decoder_for_format(heif_compression_AV1)) << "Debian's libheif1 decodes AV1 (dav1d)";
  const std::vector<uint8_t> src = read_bytes(d + "src.raw");
  EXPECT_EQ(luma_bits(read_bytes(d + "photo.hdr")), 10);
  for (const char* f : {"heic", "avif", "hdr"}) {
    const Image img = decode_image_file(d + "photo." + f);
    EXPECT_EQ(img.width, 300) << f;
    EXPECT_EQ(img.height, 200) << f;
    EXPECT_EQ(img.channels, 3) << f;
    EXPECT_EQ(diff_vs_raw(img, d + f + ".raw"), 0) << f;
    ASSERT_EQ(src.size(), img.bytes());
    double sum = 0;
    for (size_t i = 0; i < src.size(); ++i) sum += std::abs(int(src[i]) - int(img.data()[i]));
    EXPECT_LT(sum / double(src.size()), 3.0) << f;
  }
}

TEST(HeifDecode, HostileFiles) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const Image src = decode_image_file(photo_path("person"), 80, 53);  // 1/8: 80x53
  std::vector<uint8_t> good;
  encode_lossless_heic(src, 6, good);
  ASSERT_EQ(decode_image(good).height, 80);

  const char header_only[] = "\0\0\0\x18" "ftypheic\0\0\0\0mif1heic";
  write_bytes(dir / "header.heic", header_only, sizeof header_only - 1);
  std::string e = error_of([&] { decode_image_file((dir / "header.heic").string()); });
  EXPECT_NE(e.find("header.heic"), std::string::npos) << e;
  EXPECT_NE(e.find("HEIF"), std::string::npos) << e;
  write_bytes(dir / "cut.heic", good.data(), good.size() * 2 / 3);
  e = error_of([&] { decode_image_file((dir / "cut.heic").string()); });
  EXPECT_NE(e.find("cut.heic"), std::string::npos) << e;
  DecodeOptions strict;
  strict.max_pixels = 1000;
  e = error_of([&] { decode_image(good, strict, "strict.heic"); });
  EXPECT_NE(e.find("= 4240 pixels, over the limit of 1000"), std::string::npos) << e;
  Image img;
  EXPECT_NE(error_of([&] { decode_heif_into(img, {}); }).find("empty"), std::string::npos);
  // An MP4 video is not mistaken for a HEIF image.
  const char mp4[] = "\0\0\0\x18" "ftypisom\0\0\0\0isomavc1";
  EXPECT_EQ(sniff_format(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(mp4), sizeof mp4 - 1)),
            ImageFormat::unknown);
  write_bytes(dir / "clip.heic", mp4, sizeof mp4 - 1);
  EXPECT_NE(error_of([&] { decode_image_file((dir / "clip.heic").string()); }).find("brand 'isom'"),
            std::string::npos);

  expect_mutations_decode_or_throw(good, decode_heif_into, 7);
}
