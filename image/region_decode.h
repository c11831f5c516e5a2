#pragma once
// Decoding one part of a photo, for face crops: a face that is 5% of a
// 12-MP photo's width needs more pixels than a whole-photo decode scaled to
// a network's input keeps, but decoding all 12 MP for it wastes most of
// the work. For a JPEG, libjpeg decodes only the rows down to the region's
// bottom and runs the IDCT, upsampling and color conversion only on the
// region's columns (jpeg_crop_scanline, jpeg_skip_scanlines), DCT-scaled
// when the region is larger than needed.
#include <cstdint>
#include <span>
#include <string_view>

#include "image/image.h"

namespace tandem::image {

// A rectangle in the pixels of the UPRIGHT photo (as a viewer shows it, EXIF
// orientation applied), full-resolution pixel units; may extend beyond the
// photo.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Decodes the part of the photo `bytes` covering `region` (clipped to the
// photo), upright, into `out` (reusing its buffer).
//
// Scale: the smallest DCT scale 1/8, 1/4, 1/2 or 1/1 at which the clipped
// region's shorter side is >= min_side pixels; 1/1 when none is, or when
// min_side <= 0 (as DecodeOptions' 0 means full size). libjpeg-turbo's
// other factors (3/8, 5/8, ...) are not used: only when 1/scale is a whole
// number of pixels does every decoded pixel start on a full-resolution
// pixel, so that *origin_out can be an exact integer.
//
// out: the decoded pixels covering the clipped region at that scale (every
// one that overlaps it, so out reaches less than one decoded pixel beyond
// it on each side; exactly the region at 1/1), upright; RGB, or 1 channel
// for a grayscale file as decode_image gives; out.orientation as
// decode_image sets it; out.full_width and out.full_height the upright
// photo's full size.
// *scale_out (if non-null): decoded pixels per full-resolution pixel.
// *origin_out (if non-null): x, y = the upright full-resolution coordinates
// of the top-left corner of out's pixel (0, 0), so out's pixel (i, j) covers
// [x + i / scale, x + (i + 1) / scale) x [y + j / scale, ...), clipped to
// the photo; width, height = out's extent in full-resolution pixels
// (out.width / scale, out.height / scale). x or y may be negative, by less
// than 1 / scale, where a mirrored axis starts with the stored image's
// partial last block, as it does in decode_image's scaled output.
//
// opt: max_pixels, accept_jpeg_warnings and apply_orientation as
// decode_image_into uses them; min_width and min_height are ignored
// (min_side decides the scale). A region of a progressive JPEG costs a
// Huffman decode of every scan of the whole photo: skip_unread_scans drops
// the scans a 1/8 decode does not read (the same pixels), and
// coarse_progressive, at the other scales, luma's AC refinement scans
// (out.approximate set; image/jpeg_scans.h). A JPEG's rows below the
// region are not read, nor the scans a cut drops, so corrupt or missing
// data there goes unnoticed.
//
// PNG, WebP, HEIF, CMYK or YCCK JPEGs, and JPEGs libjpeg cannot crop, are
// decoded whole at full resolution and cropped (the same result at scale 1,
// only slower). Throws tandem::Error naming `name` on unreadable or corrupt
// data and, as "region outside the photo", when nothing of `region` is in
// the photo.
void decode_region_into(Image& out, std::span<const uint8_t> bytes, PixelRect region, int min_side,
                        const DecodeOptions& opt, std::string_view name,
                        double* scale_out = nullptr, PixelRect* origin_out = nullptr);

// Several regions of one photo in one pass over the file: the faces of a
// group photo each decoded on their own would read the rows above them
// once per face. Decodes, at the finest scale any region asks for (the
// scale rule above, per region), the smallest rectangle covering every
// region; out, *scale_out and *origin_out describe that rectangle as
// decode_region_into describes its one region. Within it, only the pixels
// of the regions' own decodes (each as decode_region_into would decode it
// at that scale) are decoded, equal to the whole decode's there; the rest
// is black, its rows skipped (a JPEG's rows between the regions are read,
// not transformed). Regions wholly outside the photo are ignored; throws
// "region outside the photo" when every region is.
void decode_regions_into(Image& out, std::span<const uint8_t> bytes, std::span<const PixelRect> regions,
                         int min_side, const DecodeOptions& opt, std::string_view name,
                         double* scale_out = nullptr, PixelRect* origin_out = nullptr);

}  // namespace tandem::image
