#include "image/decode.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

#include "core/error.h"
#include "image/heif_decoder.h"
#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "image/webp_decoder.h"

namespace tandem::image {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t offset = 0) {
  if (bytes.size() < offset + magic.size()) return false;
  return std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

constexpr const char* kSupported = "(supported: JPEG, PNG, WebP, HEIF/HEIC/AVIF)";

std::string fourcc_at(std::span<const uint8_t> bytes, size_t offset) {
  std::string s;
  for (size_t i = offset; i < offset + 4 && i < bytes.size(); ++i) {
    s += bytes[i] >= 0x20 && bytes[i] < 0x7f ? char(bytes[i]) : '?';
  }
  return s;
}

// Names formats people actually feed a photo tagger, so the error says what
// the file is rather than only what it is not.
std::string describe_unknown(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return "file is empty (0 bytes)";
  const std::string supported = kSupported;
  if (starts_with(bytes, "GIF8")) return "GIF images are not supported " + supported;
  if (starts_with(bytes, "BM")) return "BMP images are not supported " + supported;
  if (starts_with(bytes, std::string_view("II*\0", 4)) || starts_with(bytes, std::string_view("MM\0*", 4)))
    return "TIFF images (and camera raw files) are not supported " + supported;
  if (starts_with(bytes, "ftyp", 4))
    return "ISO media file of brand '" + fourcc_at(bytes, 8) + "' (a video?) is not a supported image " +
           supported;
  std::string hex;
  char buf[4];
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%02x ", bytes[i]);
    hex += buf;
  }
  return "not a JPEG, PNG, WebP or HEIF image (starts with " + hex.substr(0, hex.size() - 1) + ")";
}

bool is_heif_brand(std::span<const uint8_t> bytes) {
  static constexpr std::string_view kBrands[] = {"heic", "heix", "heim", "heis", "hevc", "hevx",
                                                 "mif1", "mif2", "msf1", "avif", "avis"};
  if (!starts_with(bytes, "ftyp", 4)) return false;
  for (std::string_view brand : kBrands) {
    if (starts_with(bytes, brand, 8)) return true;
  }
  return false;
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

ImageFormat sniff_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\xff\xd8\xff")) return ImageFormat::jpeg;
  if (starts_with(bytes, std::string_view("\x89PNG\r\n\x1a\n", 8))) return ImageFormat::png;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::webp;
  if (is_heif_brand(bytes)) return ImageFormat::heif;
  return ImageFormat::unknown;
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::jpeg: return "JPEG";
    case ImageFormat::png: return "PNG";
    case ImageFormat::webp: return "WebP";
    case ImageFormat::heif: return "HEIF";
    case ImageFormat::unknown: break;
  }
  return "unknown";
}

std::vector<uint8_t> read_file_bytes(const std::string& path, int64_t max_bytes) {
  std::vector<uint8_t> bytes;
  read_file_into(bytes, path, max_bytes);
  return bytes;
}

void read_file_into(std::vector<uint8_t>& bytes, const std::string& path, int64_t max_bytes) {
  const ErrorContext ctx{path, {}, {}, {}};
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw Error(std::string("cannot open: ") + std::strerror(errno), ctx);
  struct stat st {};
  check(fstat(fileno(f.get()), &st) == 0, std::string("cannot stat: ") + std::strerror(errno), ctx);
  check(S_ISREG(st.st_mode), "not a regular file", ctx);
  check(st.st_size <= max_bytes,
        "file is " + std::to_string(st.st_size) + " bytes, over the limit of " +
            std::to_string(max_bytes),
        ctx);
  bytes.resize(size_t(st.st_size));
  size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  if (got == bytes.size()) return;
  check(!std::feof(f.get()),
        "changed while it was read: it ended after " + std::to_string(got) + " of its " +
            std::to_string(bytes.size()) + " bytes (still being written, or replaced?)",
        ctx);
  throw Error(std::string("read error: ") + std::strerror(errno), ctx);
}

std::vector<uint8_t> read_file_head(const std::string& path, int64_t max_bytes) {
  const ErrorContext ctx{path, {}, {}, {}};
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw Error(std::string("cannot open: ") + std::strerror(errno), ctx);
  std::vector<uint8_t> bytes(static_cast<size_t>(max_bytes));
  const size_t got = std::fread(bytes.data(), 1, bytes.size(), f.get());
  check(got == bytes.size() || std::feof(f.get()),
        std::string("read error: ") + std::strerror(errno), ctx);
  bytes.resize(got);
  return bytes;
}

void decode_image_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                       std::string_view name) {
  out.approximate = false;  // the JPEG decoder alone approximates
  switch (sniff_format(bytes)) {
    case ImageFormat::jpeg:
      return decode_jpeg_into(out, bytes, opt, name);
    case ImageFormat::png:
      return decode_png_into(out, bytes, opt, name);
    case ImageFormat::webp:
      return decode_webp_into(out, bytes, opt, name);
    case ImageFormat::heif:
      return decode_heif_into(out, bytes, opt, name);
    case ImageFormat::unknown:
      break;
  }
  throw Error(describe_unknown(bytes), ErrorContext{std::string(name), {}, {}, {}});
}

Image decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt, std::string_view name) {
  Image img;
  decode_image_into(img, bytes, opt, name);
  return img;
}

Image decode_image_file(const std::string& path, const DecodeOptions& opt) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, opt.max_file_bytes);
  return decode_image(bytes, opt, path);
}

Image decode_image_file(const std::string& path, int min_width, int min_height) {
  DecodeOptions opt;
  opt.min_width = min_width;
  opt.min_height = min_height;
  return decode_image_file(path, opt);
}

}  // namespace tandem::image
