#include "image/png_decoder.h"

#include <png.h>

#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/exif_orientation.h"
#include "image/orientation.h"
#include "image/pixel_limit.h"

namespace tandem::image {

namespace {

// libpng reports errors by longjmp. Every function below that calls setjmp
// holds only trivially destructible locals, so the jump skips no destructor
// (the C++ rule for setjmp/longjmp); C++ objects live in the caller.
struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char error[200];
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->error, sizeof(src->error), "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}  // ancillary-chunk trouble: decode anyway

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "file is truncated (unexpected end of PNG data)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

// A chunk type as messages show it: letters kept, other bytes as '?'.
std::string printable(std::string type) {
  for (char& ch : type)
    if (!std::isalpha(static_cast<unsigned char>(ch))) ch = '?';
  return type;
}

// Owns the libpng structs; destroyed on every path, error or not.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngSource src{};
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

struct PngHeader {
  png_uint_32 width, height;
  int bit_depth, color_type;
};

bool read_header(PngReader& r, PngHeader* h) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_set_read_fn(r.png, &r.src, read_from_memory);
  png_read_info(r.png, r.info);
  h->width = png_get_image_width(r.png, r.info);
  h->height = png_get_image_height(r.png, r.info);
  h->bit_depth = png_get_bit_depth(r.png, r.info);
  h->color_type = png_get_color_type(r.png, r.info);
  return true;
}

// Sets the transforms to 8-bit gray/RGB without alpha; returns the channel
// count libpng will then deliver, or 0 on a libpng error.
int set_transforms(PngReader& r, const PngHeader& h) {
  if (setjmp(png_jmpbuf(r.png))) return 0;
  if (h.color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  if (h.color_type == PNG_COLOR_TYPE_GRAY && h.bit_depth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
  if (h.bit_depth == 16) png_set_strip_16(r.png);  // high byte, as PIL's "RGB;16B"
  png_set_strip_alpha(r.png);
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  if (png_get_bit_depth(r.png, r.info) != 8) return -1;
  return png_get_channels(r.png, r.info);
}

bool read_pixels(PngReader& r, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  return true;
}

// From an eXIf chunk before the image data (png_read_info stops at the
// first IDAT; one after it, which the PNG spec discourages, is not seen).
int exif_orientation(const PngReader& r) {
  png_uint_32 size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(r.png, r.info, &size, &exif) == 0 || exif == nullptr) return 1;
  return orientation_from_tiff(std::span<const uint8_t>(exif, size));
}

// IHDR must be the first chunk: signature(8) length(4) "IHDR" width(4)
// height(4), big-endian. Checking it here refuses a bomb even when the rest
// of the file is missing (libpng's png_read_info reads on to the first IDAT).
void check_ihdr_size(std::span<const uint8_t> b, const DecodeOptions& opt, std::string_view name) {
  if (b.size() < 24 || std::memcmp(b.data() + 12, "IHDR", 4) != 0) return;  // libpng will object
  auto be32 = [&](size_t at) {
    return int64_t(b[at]) << 24 | int64_t(b[at + 1]) << 16 | int64_t(b[at + 2]) << 8 | int64_t(b[at + 3]);
  };
  check_pixel_limit("PNG", be32(16), be32(20), opt, name);
}

// Sets `r` up to read `bytes` and reads up to the image data (the header
// and the chunks before it).
// libpng allocates and zeroes a chunk's declared length before reading its
// data: a 127-byte file whose text chunk claims 1.97 GB took 17 s and 1.9
// GB of memory to be found short (fuzzing). A chunk that claims more bytes
// than the file holds after it is refused here, before libpng sees it;
// libpng would refuse the truncated file too, only later.
void check_chunk_lengths(std::span<const uint8_t> bytes, const ErrorContext& ctx) {
  uint64_t pos = 8;  // after the signature
  while (pos + 8 <= bytes.size()) {
    const uint8_t* c = bytes.data() + pos;
    const uint64_t length = uint64_t(c[0]) << 24 | uint64_t(c[1]) << 16 | uint64_t(c[2]) << 8 | uint64_t(c[3]);
    const std::string type(reinterpret_cast<const char*>(c + 4), 4);
    const uint64_t after = bytes.size() - pos - 8;  // data and CRC
    if (length + 4 > after)
      throw Error("PNG chunk '" + printable(type) + "' claims " + std::to_string(length) + " bytes, the file holds " +
                      std::to_string(after >= 4 ? after - 4 : 0) + " after it (truncated or corrupt)",
                  ctx);
    if (type == "IEND") return;
    pos += 12 + length;
  }
}

PngHeader open_png(PngReader& r, std::span<const uint8_t> bytes, const ErrorContext& ctx) {
  check_chunk_lengths(bytes, ctx);
  r.src = PngSource{bytes.data(), bytes.size(), 0, {}};
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r.src, on_png_error, on_png_warning);
  check(r.png != nullptr, "png_create_read_struct failed", ctx);
  r.info = png_create_info_struct(r.png);
  check(r.info != nullptr, "png_create_info_struct failed", ctx);
  PngHeader h{};
  if (!read_header(r, &h)) throw Error(std::string("bad PNG header: ") + r.src.error, ctx);
  return h;
}

}  // namespace

void decode_png_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                     std::string_view name) {
  const ErrorContext ctx{std::string(name), {}, {}, {}};
  check(!bytes.empty(), "PNG file is empty (0 bytes)", ctx);
  check(bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0, "not a PNG file (bad signature)",
        ctx);
  check_ihdr_size(bytes, opt, name);
  PngReader r;
  const PngHeader h = open_png(r, bytes, ctx);
  check_pixel_limit("PNG", h.width, h.height, opt, name);

  const int channels = set_transforms(r, h);
  if (channels == 0) throw Error(std::string("bad PNG: ") + r.src.error, ctx);
  check(channels == 1 || channels == 3,
        "PNG color type " + std::to_string(h.color_type) + " gives " + std::to_string(channels) +
            " channels after conversion, expected 1 or 3",
        ctx);
  const int orientation = opt.apply_orientation ? exif_orientation(r) : 1;
  Image& stored = stored_pixels_target(out, orientation);
  stored.reshape(int(h.width), int(h.height), channels);
  check(png_get_rowbytes(r.png, r.info) == stored.stride(), "PNG row size mismatch", ctx);
  std::vector<png_bytep> rows(size_t(stored.height));
  for (int y = 0; y < stored.height; ++y) rows[size_t(y)] = stored.row(y);
  if (!read_pixels(r, rows.data())) throw Error(std::string("bad PNG data: ") + r.src.error, ctx);
  turn_upright(stored, orientation, out);
}

Image decode_png(std::span<const uint8_t> bytes, const DecodeOptions& opt, std::string_view name) {
  Image img;
  decode_png_into(img, bytes, opt, name);
  return img;
}

std::vector<std::pair<std::string, std::string>> read_png_text(std::span<const uint8_t> bytes,
                                                               std::string_view name) {
  const ErrorContext ctx{std::string(name), {}, {}, {}};
  check(bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0, "not a PNG file (bad signature)", ctx);
  PngReader r;
  open_png(r, bytes, ctx);
  png_textp text = nullptr;
  int n = png_get_text(r.png, r.info, &text, nullptr);
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < n; ++i)
    out.emplace_back(text[i].key ? text[i].key : "", text[i].text ? text[i].text : "");
  return out;
}

}  // namespace tandem::image
