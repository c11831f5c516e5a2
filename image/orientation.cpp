#include "image/orientation.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.h"

namespace tandem::image {

namespace {

// Upright pixel (x, y) is stored at byte base + x * step_x + y * step_y.
struct Walk {
  ptrdiff_t base, step_x, step_y;
};

Walk walk_for(int orientation, ptrdiff_t width, ptrdiff_t height, ptrdiff_t channels) {
  const ptrdiff_t c = channels, row = width * channels;
  const ptrdiff_t last_col = (width - 1) * c, last_row = (height - 1) * row;
  switch (orientation) {
    case 1: return {0, c, row};
    case 2: return {last_col, -c, row};
    case 3: return {last_row + last_col, -c, -row};
    case 4: return {last_row, c, -row};
    case 5: return {0, row, c};
    case 6: return {last_row, -row, c};
    case 7: return {last_row + last_col, -row, -c};
    default: return {last_col, row, -c};  // 8
  }
}

// Fills upright columns [x0, x1) of rows [y0, y1).
template <int C>
void copy_block(const uint8_t* src, const Walk& w, uint8_t* dst, size_t dst_stride, int x0, int x1,
                int y0, int y1) {
  for (int y = y0; y < y1; ++y) {
    ptrdiff_t at = w.base + ptrdiff_t(y) * w.step_y + ptrdiff_t(x0) * w.step_x;
    uint8_t* d = dst + size_t(y) * dst_stride + size_t(x0) * C;
    if (w.step_x == C) {  // a stored row run, forwards
      std::memcpy(d, src + at, size_t(x1 - x0) * C);
      continue;
    }
    for (int x = x0; x < x1; ++x, at += w.step_x, d += C) {
      for (int c = 0; c < C; ++c) d[c] = src[at + c];
    }
  }
}

template <int C>
void orient(const Image& stored, int orientation, Image& upright) {
  const Walk w = walk_for(orientation, stored.width, stored.height, C);
  // Orientations 5-8 read the stored image down its columns; square tiles
  // keep the stored rows one tile touches in L1 from one upright row to the next.
  const bool tiled = orientation_swaps_axes(orientation);
  const int tile_w = tiled ? 64 : upright.width;
  const int tile_h = tiled ? 64 : upright.height;
  for (int y0 = 0; y0 < upright.height; y0 += tile_h) {
    const int y1 = std::min(upright.height, y0 + tile_h);
    for (int x0 = 0; x0 < upright.width; x0 += tile_w) {
      const int x1 = std::min(upright.width, x0 + tile_w);
      copy_block<C>(stored.data(), w, upright.data(), upright.stride(), x0, x1, y0, y1);
    }
  }
}

}  // namespace

bool orientation_swaps_axes(int orientation) { return orientation >= 5 && orientation <= 8; }

void orient_image(const Image& stored, int orientation, Image& upright) {
  check(orientation >= 1 && orientation <= 8,
        "EXIF orientation " + std::to_string(orientation) + " is not one of 1..8");
  check(!stored.empty(), "cannot orient an empty image");
  check(&stored != &upright, "orient_image needs separate source and destination images");
  const bool swap = orientation_swaps_axes(orientation);
  upright.reshape(swap ? stored.height : stored.width, swap ? stored.width : stored.height,
                  stored.channels);
  switch (stored.channels) {
    case 1: orient<1>(stored, orientation, upright); break;
    case 3: orient<3>(stored, orientation, upright); break;
    default: orient<4>(stored, orientation, upright); break;  // reshape allows only 1, 3, 4
  }
  upright.orientation = orientation;
}

Image& thread_stored_image() {
  thread_local Image stored;
  return stored;
}

Image& stored_pixels_target(Image& out, int orientation) {
  return orientation == 1 ? out : thread_stored_image();
}

void turn_upright(const Image& stored, int orientation, Image& out) {
  if (orientation == 1) {
    out.orientation = 1;  // decoded in place
  } else {
    orient_image(stored, orientation, out);
  }
  out.full_width = out.width;
  out.full_height = out.height;
}

}  // namespace tandem::image
