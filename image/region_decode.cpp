#include "image/region_decode.h"

// jpeglib.h needs FILE and size_t declared first.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "image/exif_orientation.h"
#include "image/jpeg_decoder.h"
#include "image/jpeg_scans.h"
#include "image/libjpeg_error.h"
#include "image/orientation.h"
#include "image/pixel_limit.h"

namespace tandem::image {

namespace {

ErrorContext file_context(std::string_view name) {
  return ErrorContext{std::string(name), {}, {}, {}};
}

// ---- Geometry -------------------------------------------------------------

// Full-resolution pixels [begin, end) along one upright axis.
struct Span {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

// `start`, `length` clipped to [0, full); 64-bit because a caller's
// rectangle may be anything.
Span clip(int start, int length, int full) {
  const int64_t b = std::max<int64_t>(start, 0);
  const int64_t e = std::min<int64_t>(int64_t(start) + std::max(length, 0), full);
  return e > b ? Span{int(b), int(e)} : Span{};
}

void check_inside(const Span& x, const Span& y, std::string_view name) {
  check(x.size() > 0 && y.size() > 0, "region outside the photo", file_context(name));
}

// The scale num/8: only 8, 4, 2, 1 keep 8/num whole, so that every decoded
// pixel starts on a full-resolution pixel and the origin is exact.
int region_scale_num(const Span& x, const Span& y, int min_side) {
  if (min_side <= 0) return 8;
  const int64_t shorter = std::min(x.size(), y.size());
  for (int num : {1, 2, 4}) {
    if (shorter * num >= int64_t(8) * min_side) return num;
  }
  return 8;
}

// Upright x runs against the stored axis it comes from in 2, 3, 6, 7 and
// upright y in 3, 4, 7, 8 (the walks in orientation.cpp).
bool mirrors_x(int orientation) {
  return orientation == 2 || orientation == 3 || orientation == 6 || orientation == 7;
}
bool mirrors_y(int orientation) {
  return orientation == 3 || orientation == 4 || orientation == 7 || orientation == 8;
}

// The decoded pixels, `step` full-resolution pixels each, that cover one
// upright span: [begin, end) in the stored image's order, and the upright
// full-resolution coordinate where the first of them (once turned upright)
// starts. Along a mirrored axis the stored image's partial last block comes
// first, so that start lies below the span by up to step - 1.
struct DecodedSpan {
  int begin = 0, end = 0;
  int origin = 0;
};

DecodedSpan decoded_span(const Span& upright, int full, bool mirrored, int step) {
  const int s0 = mirrored ? full - upright.end : upright.begin;
  const int s1 = mirrored ? full - upright.begin : upright.end;
  DecodedSpan d;
  d.begin = s0 / step;
  d.end = (s1 + step - 1) / step;
  d.origin = mirrored ? full - d.end * step : d.begin * step;
  return d;
}

// Decoded pixels of the stored image at the chosen scale.
struct StoredCrop {
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
};

// Where the decoded pixels lie in the upright photo.
struct Placement {
  double scale = 1;
  PixelRect origin;
};

// What to decode for `region`: the scale num/8, the crop of the stored
// image at that scale, and where the crop lies once turned upright.
struct RegionPlan {
  int num = 8;
  StoredCrop crop;
  PixelRect origin;
};

// The upright photo's size.
struct Upright {
  int width = 0, height = 0;
};

Upright upright_size(int stored_w, int stored_h, int orientation) {
  const bool swap = orientation_swaps_axes(orientation);
  return swap ? Upright{stored_h, stored_w} : Upright{stored_w, stored_h};
}

// The decode of `region` at scale num/8 (num 0: the region's own scale).
RegionPlan plan_region(const PixelRect& region, int stored_w, int stored_h, int orientation,
                       int min_side, std::string_view name, int num = 0) {
  const bool swap = orientation_swaps_axes(orientation);
  const Upright full = upright_size(stored_w, stored_h, orientation);
  const int full_w = full.width, full_h = full.height;
  const Span sx = clip(region.x, region.width, full_w);
  const Span sy = clip(region.y, region.height, full_h);
  check_inside(sx, sy, name);
  RegionPlan p;
  p.num = num > 0 ? num : region_scale_num(sx, sy, min_side);
  const int step = 8 / p.num;
  const DecodedSpan ux = decoded_span(sx, full_w, mirrors_x(orientation), step);
  const DecodedSpan uy = decoded_span(sy, full_h, mirrors_y(orientation), step);
  p.crop = swap ? StoredCrop{uy.begin, uy.end, ux.begin, ux.end}
                : StoredCrop{ux.begin, ux.end, uy.begin, uy.end};
  p.origin =
      PixelRect{ux.origin, uy.origin, (ux.end - ux.begin) * step, (uy.end - uy.begin) * step};
  return p;
}

// ---- libjpeg, the C part --------------------------------------------------

// TurboJPEG's TJFLAG_LIMITSCANS, which the whole-image path uses: a
// progressive file of thousands of tiny scans is a CPU bomb.
constexpr int kMaxScans = 500;

void limit_scans(j_common_ptr c) {
  if (!c->is_decompressor) return;
  if (reinterpret_cast<j_decompress_ptr>(c)->input_scan_number <= kMaxScans) return;
  auto* e = reinterpret_cast<LibjpegError*>(c->err);
  std::snprintf(e->message, sizeof e->message, "Progressive JPEG image has more than %d scans",
                kMaxScans);
  e->refused = true;
  std::longjmp(e->jump, 1);
}

bool give_up(jpeg_decompress_struct& cinfo, LibjpegError& e, const char* message) {
  std::snprintf(e.message, sizeof e.message, "%s", message);
  jpeg_destroy_decompress(&cinfo);
  return false;
}

// Rows [begin, end) of the stored image at the decode's scale.
struct RowSpan {
  int begin = 0, end = 0;
};

// Decodes crop `c` of the stored image at scale num/8 into `dst` (rows
// `stride` bytes apart), only the rows in `rows` (sorted, disjoint, inside
// the crop's; the others are skipped and left as they are). `cut`: the
// data is a progressive file cut to some of its scans, whose missing bits
// libjpeg's interblock smoothing must not guess (jpeg_scan_decoder.h).
// False with e.message set on any failure. Keeps to plain data, as longjmp
// skips destructors.
bool decode_crop(const uint8_t* data, size_t size, bool cut, int num, const StoredCrop& c,
                 const RowSpan* rows, size_t row_spans, int channels, uint8_t* dst, size_t stride,
                 LibjpegError& e) {
  jpeg_decompress_struct cinfo;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = limit_scans;
  use_libjpeg_error(cinfo, e);
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK)
    return give_up(cinfo, e, "no image in the JPEG");
  cinfo.scale_num = unsigned(num);
  cinfo.scale_denom = 8;
  cinfo.dct_method = JDCT_ISLOW;  // as the whole-image path (TJFLAG_ACCURATEDCT) and PIL
  if (cut) cinfo.do_block_smoothing = FALSE;
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  if (!jpeg_start_decompress(&cinfo)) return give_up(cinfo, e, "jpeg_start_decompress suspended");
  if (cinfo.output_components != channels || JDIMENSION(c.x1) > cinfo.output_width ||
      JDIMENSION(c.y1) > cinfo.output_height)
    return give_up(cinfo, e, "the scaled JPEG is not the size its header promised");

  // Fancy upsampling of subsampled chroma treats the crop's first and last
  // columns as the image's edges (up to 18 levels off the whole decode's,
  // measured); one decoded column more on each side keeps them out of the
  // region. libjpeg then moves xoffset down to an iMCU boundary.
  JDIMENSION xoffset = JDIMENSION(std::max(c.x0 - 1, 0));
  JDIMENSION width = std::min(JDIMENSION(c.x1 + 1), cinfo.output_width) - xoffset;
  jpeg_crop_scanline(&cinfo, &xoffset, &width);
  if (xoffset > JDIMENSION(c.x0) || xoffset + width < JDIMENSION(c.x1))
    return give_up(cinfo, e, "jpeg_crop_scanline cropped off part of the region");

  JSAMPARRAY row = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                              width * JDIMENSION(channels), 1);
  const size_t from = size_t(JDIMENSION(c.x0) - xoffset) * size_t(channels);
  const size_t bytes = size_t(c.width()) * size_t(channels);
  for (size_t k = 0; k < row_spans; ++k) {
    // Rows need no such margin: jpeg_skip_scanlines decodes the context rows
    // that vertical upsampling reads, and the rows after it equal the whole
    // decode's (tests/test_image_region.cpp).
    const JDIMENSION skip = JDIMENSION(rows[k].begin) - cinfo.output_scanline;
    if (skip > 0 && jpeg_skip_scanlines(&cinfo, skip) != skip)
      return give_up(cinfo, e, "jpeg_skip_scanlines skipped fewer rows than asked");
    while (cinfo.output_scanline < JDIMENSION(rows[k].end)) {
      const int y = int(cinfo.output_scanline);
      if (jpeg_read_scanlines(&cinfo, row, 1) != 1)
        return give_up(cinfo, e, "a scanline did not come");
      std::memcpy(dst + size_t(y - c.y0) * stride, row[0] + from, bytes);
    }
  }
  // No jpeg_finish_decompress: it would read (and check) the rows below.
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// ---- The two paths ----------------------------------------------------------

// The sorted, merged stored rows that `plans` decode.
std::vector<RowSpan> rows_of(const std::vector<RegionPlan>& plans) {
  std::vector<RowSpan> rows;
  for (const RegionPlan& p : plans) rows.push_back({p.crop.y0, p.crop.y1});
  std::sort(rows.begin(), rows.end(), [](const RowSpan& a, const RowSpan& b) { return a.begin < b.begin; });
  std::vector<RowSpan> merged;
  for (const RowSpan& r : rows) {
    if (!merged.empty() && r.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  }
  return merged;
}

// The regions with something inside the photo, clipped to it.
std::vector<PixelRect> inside(std::span<const PixelRect> regions, const Upright& full, std::string_view name) {
  std::vector<PixelRect> kept;
  for (const PixelRect& r : regions) {
    const Span sx = clip(r.x, r.width, full.width), sy = clip(r.y, r.height, full.height);
    if (sx.size() > 0 && sy.size() > 0) kept.push_back({sx.begin, sy.begin, sx.size(), sy.size()});
  }
  check(!kept.empty(), "region outside the photo", file_context(name));
  return kept;
}

// The bounding box of `regions` (not empty).
PixelRect bounding_box(const std::vector<PixelRect>& regions) {
  int x0 = regions[0].x, y0 = regions[0].y, x1 = x0 + regions[0].width, y1 = y0 + regions[0].height;
  for (const PixelRect& r : regions) {
    x0 = std::min(x0, r.x), y0 = std::min(y0, r.y);
    x1 = std::max(x1, r.x + r.width), y1 = std::max(y1, r.y + r.height);
  }
  return {x0, y0, x1 - x0, y1 - y0};
}

// JPEG through libjpeg's crop and skip. False when this path cannot handle
// the file (the caller falls back to the whole-image decode, which also
// reports the file's errors as the other decoders word them).
bool decode_jpeg_regions(Image& out, std::span<const uint8_t> bytes, std::span<const PixelRect> regions,
                         int min_side, const DecodeOptions& opt, std::string_view name, Placement& where) {
  const JpegInfo info = read_jpeg_info(bytes, name);
  check_pixel_limit("JPEG", info.width, info.height, opt, name);
  // PIL's CMYK -> RGB lives in the whole-image path.
  if (info.colorspace == TJCS_CMYK || info.colorspace == TJCS_YCCK) return false;

  const int orientation = opt.apply_orientation ? read_jpeg_orientation(bytes) : 1;
  const std::vector<PixelRect> kept = inside(regions, upright_size(info.width, info.height, orientation), name);
  std::vector<RegionPlan> plans;
  int num = 1;
  for (const PixelRect& r : kept) {
    plans.push_back(plan_region(r, info.width, info.height, orientation, min_side, name));
    num = std::max(num, plans.back().num);
  }
  for (size_t k = 0; k < kept.size(); ++k)
    if (plans[k].num != num) plans[k] = plan_region(kept[k], info.width, info.height, orientation, 0, name, num);
  const RegionPlan plan = plan_region(bounding_box(kept), info.width, info.height, orientation, 0, name, num);
  const std::vector<RowSpan> rows = rows_of(plans);
  const int channels = info.colorspace == TJCS_GRAY ? 1 : 3;
  Image& stored = stored_pixels_target(out, orientation);
  stored.reshape(plan.crop.width(), plan.crop.height(), channels);
  // Black between the regions' rows; within their rows the columns between
  // them are decoded all the same (libjpeg crops one span of columns).
  if (rows.size() > 1 || rows[0].begin != plan.crop.y0 || rows[0].end != plan.crop.y1)
    std::memset(stored.data(), 0, stored.bytes());
  // A progressive file's regions cost a Huffman decode of every scan over
  // the whole photo: at 1/8 the scans that scale never reads can go (the
  // same pixels), and on request luma's refinement scans, most of the rest.
  thread_local std::vector<uint8_t> kept_scans;
  const std::optional<ScanCut> scans =
      scan_cut(plan.num, 8, opt.skip_unread_scans, opt.coarse_progressive);
  const bool cut = scans && copy_scans(bytes, kept_scans, *scans);
  const bool approximate = cut && *scans == ScanCut::luma_coarse;
  const std::span<const uint8_t> data = cut ? std::span<const uint8_t>(kept_scans) : bytes;
  LibjpegError e;
  e.stop_on_warning = !opt.accept_jpeg_warnings;
  if (!decode_crop(data.data(), data.size(), cut, plan.num, plan.crop, rows.data(), rows.size(),
                   channels, stored.data(), stored.stride(), e)) {
    if (e.warning)
      throw Error(std::string("corrupt or truncated JPEG: ") + e.message, file_context(name));
    if (e.refused) throw Error(std::string("cannot decode JPEG: ") + e.message, file_context(name));
    return false;
  }
  if (orientation == 1)
    out.orientation = 1;
  else
    orient_image(stored, orientation, out);
  out.approximate = approximate;
  const bool swap = orientation_swaps_axes(orientation);
  out.full_width = swap ? info.height : info.width;
  out.full_height = swap ? info.width : info.height;
  where = Placement{double(plan.num) / 8, plan.origin};
  return true;
}

void copy_rect(const Image& src, const Span& x, const Span& y, Image& dst) {
  dst.reshape(x.size(), y.size(), src.channels);
  const size_t at = size_t(x.begin) * size_t(src.channels);
  for (int r = 0; r < y.size(); ++r)
    std::memcpy(dst.row(r), src.row(y.begin + r) + at, dst.stride());
}

// Any format: the whole photo upright at full resolution, then the crop.
Placement decode_by_cropping(Image& out, std::span<const uint8_t> bytes, std::span<const PixelRect> regions,
                             const DecodeOptions& opt, std::string_view name) {
  DecodeOptions full = opt;
  full.min_width = full.min_height = 0;
  // Not one per thread: this is the rare path, and a 12-MP buffer kept per
  // thread for it would outweigh an allocation per call.
  Image whole;
  decode_image_into(whole, bytes, full, name);
  const PixelRect region = bounding_box(inside(regions, Upright{whole.width, whole.height}, name));
  const Span sx = clip(region.x, region.width, whole.width);
  const Span sy = clip(region.y, region.height, whole.height);
  copy_rect(whole, sx, sy, out);
  out.approximate = whole.approximate;
  out.orientation = whole.orientation;
  out.full_width = whole.full_width;
  out.full_height = whole.full_height;
  return Placement{1.0, PixelRect{sx.begin, sy.begin, sx.size(), sy.size()}};
}

}  // namespace

void decode_region_into(Image& out, std::span<const uint8_t> bytes, PixelRect region, int min_side,
                        const DecodeOptions& opt, std::string_view name, double* scale_out,
                        PixelRect* origin_out) {
  decode_regions_into(out, bytes, std::span<const PixelRect>(&region, 1), min_side, opt, name, scale_out,
                      origin_out);
}

void decode_regions_into(Image& out, std::span<const uint8_t> bytes, std::span<const PixelRect> regions,
                         int min_side, const DecodeOptions& opt, std::string_view name, double* scale_out,
                         PixelRect* origin_out) {
  check(!regions.empty(), "region outside the photo", file_context(name));
  Placement where;
  const bool done = sniff_format(bytes) == ImageFormat::jpeg &&
                    decode_jpeg_regions(out, bytes, regions, min_side, opt, name, where);
  if (!done) where = decode_by_cropping(out, bytes, regions, opt, name);
  if (scale_out) *scale_out = where.scale;
  if (origin_out) *origin_out = where.origin;
}

}  // namespace tandem::image
