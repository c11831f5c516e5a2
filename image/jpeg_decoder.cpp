#include "image/jpeg_decoder.h"

#include <turbojpeg.h>

#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/exif_orientation.h"
#include "image/jpeg_scan_decoder.h"
#include "image/jpeg_scans.h"
#include "image/orientation.h"
#include "image/pixel_limit.h"

namespace tandem::image {

namespace {

// One decompressor per thread: a tjhandle is not thread-safe, and creating
// one per image would cost an allocation of libjpeg's state each time.
struct ThreadDecompressor {
  tjhandle handle = nullptr;
  ~ThreadDecompressor() { reset(); }
  void reset() {
    if (handle) tjDestroy(handle);
    handle = nullptr;
  }
};

thread_local ThreadDecompressor t_decompressor;

ErrorContext file_context(std::string_view name) { return ErrorContext{std::string(name), {}, {}, {}}; }

tjhandle thread_decompressor() {
  if (!t_decompressor.handle) {
    t_decompressor.handle = tjInitDecompress();
    check(t_decompressor.handle != nullptr,
          std::string("tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
  }
  return t_decompressor.handle;
}

// Throws the handle's error and drops the handle: libjpeg-turbo 2.1's
// tjDecompressHeader3 returns from a failed header without aborting the
// decompressor, and the stale state then breaks the next, valid file.
[[noreturn]] void fail(tjhandle tj, const std::string& what, std::string_view name) {
  std::string msg = what + tjGetErrorStr2(tj);
  t_decompressor.reset();
  throw Error(msg, file_context(name));
}

void check_not_empty(std::span<const uint8_t> bytes, std::string_view name) {
  check(!bytes.empty(), "JPEG file is empty (0 bytes)", file_context(name));
  check(bytes.size() <= ULONG_MAX, "JPEG file too large", file_context(name));
}

// PIL's CMYK -> RGB (Convert.c cmyk2rgb) on libjpeg's Adobe-inverted CMYK
// (255 = no ink), which is how PIL reads every CMYK JPEG too ("CMYK;I"):
// with C = 255 - c_stored and nk = k_stored, R = nk - round(C * nk / 255).
inline uint8_t cmyk_channel(uint8_t stored, uint8_t k_stored) {
  int ink = 255 - stored;
  int nk = k_stored;
  int t = ink * nk + 128;
  int v = nk - (((t >> 8) + t) >> 8);  // MULDIV255, exact for 0..255 x 0..255
  return uint8_t(v < 0 ? 0 : v);
}

void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* s = cmyk + 4 * i;
    uint8_t* d = rgb + 3 * i;
    d[0] = cmyk_channel(s[0], s[3]);
    d[1] = cmyk_channel(s[1], s[3]);
    d[2] = cmyk_channel(s[2], s[3]);
  }
}

}  // namespace

JpegInfo read_jpeg_info(std::span<const uint8_t> bytes, std::string_view name) {
  check_not_empty(bytes, name);
  tjhandle tj = thread_decompressor();
  JpegInfo info;
  if (tjDecompressHeader3(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), &info.width,
                          &info.height, &info.subsampling, &info.colorspace) != 0) {
    fail(tj, "not a readable JPEG: ", name);
  }
  check(info.width > 0 && info.height > 0, "JPEG header gives an empty image", file_context(name));
  return info;
}

JpegScale choose_jpeg_scale(int width, int height, int min_width, int min_height) {
  JpegScale best{1, 1, width, height};
  if (min_width <= 0 && min_height <= 0) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  if (!factors) return best;
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num <= 0 || f.denom <= 0 || f.num > f.denom) continue;  // never upscale
    int w = TJSCALED(width, f);
    int h = TJSCALED(height, f);
    if (w < min_width || h < min_height) continue;
    // Smaller factor = less work; compare num/denom exactly.
    if (int64_t(f.num) * best.denom < int64_t(best.num) * f.denom) best = {f.num, f.denom, w, h};
  }
  return best;
}

namespace {

// A progressive file decoded from the scans `cut` keeps, for a fraction of
// the Huffman work. False for any other file.
bool decode_kept_scans(uint8_t* dst, std::span<const uint8_t> bytes, const JpegScale& s,
                       ScanCut cut, int format, int pitch, const DecodeOptions& opt,
                       std::string_view name) {
  thread_local std::vector<uint8_t> kept;
  if (!copy_scans(bytes, kept, cut)) return false;
  decode_cut_scans(kept, s.num, s.denom, dst, s.width, s.height, tjPixelSize[format], pitch,
                   opt.accept_jpeg_warnings, name);
  return true;
}

// Decodes the pixels as the file stores them, DCT-scaled by `s`.
// Returns whether the pixels are approximate (refinement scans skipped).
bool decode_stored(Image& out, std::span<const uint8_t> bytes, const JpegInfo& info,
                   const JpegScale& s, const DecodeOptions& opt, std::string_view name) {
  const bool gray = info.colorspace == TJCS_GRAY;
  const bool cmyk = info.colorspace == TJCS_CMYK || info.colorspace == TJCS_YCCK;
  // ACCURATEDCT: the islow IDCT, as PIL uses, so outputs match PIL's.
  // LIMITSCANS: refuse progressive files with absurd scan counts (CPU bomb).
  int flags = TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS;
  if (!opt.accept_jpeg_warnings) flags |= TJFLAG_STOPONWARNING;

  std::vector<uint8_t> cmyk_buf;
  out.reshape(s.width, s.height, gray ? 1 : 3);
  uint8_t* dst = out.data();
  int format = gray ? TJPF_GRAY : TJPF_RGB;
  if (cmyk) {
    cmyk_buf.resize(size_t(s.width) * size_t(s.height) * 4);
    dst = cmyk_buf.data();
    format = TJPF_CMYK;
  }
  const int pitch = s.width * tjPixelSize[format];
  // Luma's refinement scans go only at 1/4 or less: the detector's input,
  // where the approximation was measured harmless.
  const std::optional<ScanCut> cut = scan_cut(s.num, s.denom, opt.skip_unread_scans,
                                              opt.coarse_progressive && 4 * s.num <= s.denom);
  if (cut && decode_kept_scans(dst, bytes, s, *cut, format, pitch, opt, name)) {
    if (cmyk) cmyk_to_rgb(cmyk_buf.data(), out.data(), size_t(s.width) * size_t(s.height));
    return *cut == ScanCut::luma_coarse;
  }
  tjhandle tj = thread_decompressor();
  if (tjDecompress2(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), dst, s.width, pitch,
                    s.height, format, flags) != 0) {
    const bool warning = tjGetErrorCode(tj) == TJERR_WARNING;
    if (!(warning && opt.accept_jpeg_warnings)) {
      fail(tj, warning ? "corrupt or truncated JPEG: " : "cannot decode JPEG: ", name);
    }
  }
  if (cmyk) cmyk_to_rgb(cmyk_buf.data(), out.data(), size_t(s.width) * size_t(s.height));
  return false;
}

}  // namespace

void decode_jpeg_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                      std::string_view name) {
  const JpegInfo info = read_jpeg_info(bytes, name);
  check_pixel_limit("JPEG", info.width, info.height, opt, name);

  const int orientation = opt.apply_orientation ? read_jpeg_orientation(bytes) : 1;
  // min_width/min_height describe the upright image; the DCT scales the stored one.
  const bool swap = orientation_swaps_axes(orientation);
  const JpegScale s = choose_jpeg_scale(info.width, info.height, swap ? opt.min_height : opt.min_width,
                                        swap ? opt.min_width : opt.min_height);
  Image& stored = stored_pixels_target(out, orientation);
  const bool approximate = decode_stored(stored, bytes, info, s, opt, name);
  turn_upright(stored, orientation, out);
  out.approximate = approximate;
  out.full_width = swap ? info.height : info.width;
  out.full_height = swap ? info.width : info.height;
}

Image decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& opt, std::string_view name) {
  Image img;
  decode_jpeg_into(img, bytes, opt, name);
  return img;
}

Image decode_jpeg(std::span<const uint8_t> bytes, int min_width, int min_height,
                  std::string_view name) {
  DecodeOptions opt;
  opt.min_width = min_width;
  opt.min_height = min_height;
  return decode_jpeg(bytes, opt, name);
}

}  // namespace tandem::image
