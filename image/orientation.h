#pragma once
// The eight EXIF orientations (Exif 2.3 / TIFF 6.0 tag 0x0112) as pixel
// transforms from the image as a file stores it to the picture a viewer
// shows. The value says where the stored row 0 / column 0 end up:
//   1 top/left      as stored
//   2 top/right     mirrored left-right
//   3 bottom/right  rotated 180
//   4 bottom/left   mirrored top-bottom
//   5 left/top      transposed (mirrored about the main diagonal)
//   6 right/top     rotated 90 clockwise
//   7 right/bottom  transversed (mirrored about the anti-diagonal)
//   8 left/bottom   rotated 90 counter-clockwise
// These are PIL's ImageOps.exif_transpose methods: FLIP_LEFT_RIGHT,
// ROTATE_180, FLIP_TOP_BOTTOM, TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90.
#include "image/image.h"

namespace tandem::image {

// True for 5..8: the upright image is the stored one with width and height
// swapped.
bool orientation_swaps_axes(int orientation);

// Writes `stored` (1, 3 or 4 interleaved channels) as viewed under
// `orientation` into `upright`, reusing its buffer, and sets
// upright.orientation = orientation. `upright` must be another Image.
// Throws tandem::Error on an orientation outside 1..8 or an empty image.
void orient_image(const Image& stored, int orientation, Image& upright);

// Where a decoder puts the stored pixels of an image it then orients into
// the caller's Image: one per thread, so a thread decoding rotated photos
// allocates only when a larger one arrives. Only for the decoders' own
// decode-then-orient step (it is overwritten by the next decode).
Image& thread_stored_image();

// The decode-then-orient step of a decoder whose output is not scaled:
// decode the stored pixels into stored_pixels_target(out, orientation) (out
// itself for orientation 1, else thread_stored_image()), then call
// turn_upright, which orients them into `out` when needed and sets
// out.orientation, out.full_width and out.full_height (to the upright size;
// a decoder that scales sets the full size itself afterwards).
Image& stored_pixels_target(Image& out, int orientation);
void turn_upright(const Image& stored, int orientation, Image& out);

}  // namespace tandem::image
