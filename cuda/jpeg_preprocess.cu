// The two resampling passes of cuda/jpeg_preprocess.h. Integer arithmetic
// identical to image/resize.cpp (accumulate from half a unit, shift by 22,
// clamp to 0..255) and the float conversion with the same float32
// operations as image/preprocess.cpp's table, so equal input pixels give
// equal outputs.
#include "cuda/jpeg_preprocess.h"

#include <string>

#include "cuda/check.h"

namespace tandem::cuda {

namespace {

constexpr int kWeightBits = 22;
constexpr int32_t kHalf = int32_t(1) << (kWeightBits - 1);

__device__ __forceinline__ uint8_t clip8(int32_t acc) {
  const int32_t v = acc >> kWeightBits;
  return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// How vertical_pass writes its floats (GpuPreprocessParams, by value).
struct OutputFormat {
  bool interleaved, normalize;
  float mean[3], std[3];
};

// temp[r][j][c] for r in [0, rows), j in [0, width): upright row row0 + r
// filtered horizontally at output column j. A thread loops over all of its
// column's taps: 25 for a 12-MP photo's long side at 224 (11.8x), 17 at
// 512 (7.9x), each a 3-byte load.
__global__ void horizontal_pass(StoredRgb img, DeviceAxis h, int width, int row0, int rows,
                                uint8_t* temp) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= width || r >= rows) return;
  const int32_t* w = h.weights + size_t(j) * size_t(h.taps);
  const uint8_t* p = img.data + img.base + ptrdiff_t(h.start[j]) * img.step_x + ptrdiff_t(row0 + r) * img.step_y;
  const int c1 = img.gray ? 0 : 1, c2 = img.gray ? 0 : 2;
  int32_t a0 = kHalf, a1 = kHalf, a2 = kHalf;
  for (int t = 0; t < h.taps; ++t) {
    const uint8_t* q = p + ptrdiff_t(t) * img.step_x;  // indexed: a walk may run backwards
    const int32_t k = w[t];
    a0 += int32_t(q[0]) * k;
    a1 += int32_t(q[c1]) * k;
    a2 += int32_t(q[c2]) * k;
  }
  uint8_t* d = temp + (size_t(r) * size_t(width) + size_t(j)) * 3;
  d[0] = clip8(a0);
  d[1] = clip8(a1);
  d[2] = clip8(a2);
}

// Output pixel (j, i) of a width x height window: the vertical filter over
// temp's rows, rounded to 8 bits, then either (x / 255 - mean) / std or x
// itself, to planes out[c][i][j] or interleaved out[i][j][c].
__global__ void vertical_pass(const uint8_t* temp, DeviceAxis v, int width, int height, int row0,
                              OutputFormat f, float* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= width || i >= height) return;
  const int32_t* w = v.weights + size_t(i) * size_t(v.taps);
  const size_t row_bytes = size_t(width) * 3;
  const uint8_t* s = temp + size_t(v.start[i] - row0) * row_bytes + size_t(j) * 3;
  int32_t acc[3] = {kHalf, kHalf, kHalf};
  for (int t = 0; t < v.length[i]; ++t, s += row_bytes) {
    const int32_t k = w[t];
    for (int c = 0; c < 3; ++c) acc[c] += int32_t(s[c]) * k;
  }
  const size_t pixel = size_t(i) * size_t(width) + size_t(j);
  const size_t plane = size_t(width) * size_t(height);
  for (int c = 0; c < 3; ++c) {
    float y = float(clip8(acc[c]));
    if (f.normalize) {
      // __fdiv_rn/__fsub_rn: IEEE float32 steps, never contracted or
      // approximated, as the CPU's table computes them.
      y = __fdiv_rn(__fsub_rn(__fdiv_rn(y, 255.0f), f.mean[c]), f.std[c]);
    }
    out[f.interleaved ? pixel * 3 + size_t(c) : size_t(c) * plane + pixel] = y;
  }
}

// Output pixel (x, y) of a width x height image: the mean, rounded half
// up, of the factor x factor upright pixels from (x0 + x * factor,
// y0 + y * factor), packed RGB rows.
__global__ void upright_shrink(StoredRgb img, int x0, int y0, int width, int height, int factor,
                               uint8_t* out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const int c1 = img.gray ? 0 : 1, c2 = img.gray ? 0 : 2;
  uint32_t a0 = 0, a1 = 0, a2 = 0;
  for (int j = 0; j < factor; ++j) {
    const uint8_t* row = img.data + img.base + ptrdiff_t(y0 + y * factor + j) * img.step_y;
    for (int i = 0; i < factor; ++i) {
      const uint8_t* q = row + ptrdiff_t(x0 + x * factor + i) * img.step_x;
      a0 += q[0], a1 += q[c1], a2 += q[c2];
    }
  }
  const uint32_t n = uint32_t(factor * factor), half = n / 2;
  uint8_t* d = out + (size_t(y) * size_t(width) + size_t(x)) * 3;
  d[0] = uint8_t((a0 + half) / n);
  d[1] = uint8_t((a1 + half) / n);
  d[2] = uint8_t((a2 + half) / n);
}

}  // namespace

StoredRgb stored_rgb(const uint8_t* data, size_t pitch, int width, int height, int orientation, bool gray) {
  // image/orientation.cpp's walk_for with 3-byte pixels and a pitched row.
  const ptrdiff_t c = 3, row = ptrdiff_t(pitch);
  const ptrdiff_t last_col = ptrdiff_t(width - 1) * c, last_row = ptrdiff_t(height - 1) * row;
  StoredRgb s;
  s.data = data;
  s.gray = gray;
  switch (orientation) {
    case 1: s.base = 0, s.step_x = c, s.step_y = row; break;
    case 2: s.base = last_col, s.step_x = -c, s.step_y = row; break;
    case 3: s.base = last_row + last_col, s.step_x = -c, s.step_y = -row; break;
    case 4: s.base = last_row, s.step_x = c, s.step_y = -row; break;
    case 5: s.base = 0, s.step_x = row, s.step_y = c; break;
    case 6: s.base = last_row, s.step_x = -row, s.step_y = c; break;
    case 7: s.base = last_row + last_col, s.step_x = -row, s.step_y = -c; break;
    case 8: s.base = last_col, s.step_x = row, s.step_y = -c; break;
    default: throw Error("EXIF orientation " + std::to_string(orientation) + " is not one of 1..8");
  }
  return s;
}

void launch_preprocess(const StoredRgb& img, const DeviceAxis& horizontal,
                       const DeviceAxis& vertical, int row0, int rows, uint8_t* temp,
                       const GpuPreprocessParams& p, float* out, cudaStream_t stream) {
  const int width = p.output_width(), height = p.output_height();
  const dim3 block(32, 8);
  const unsigned gx = unsigned((width + 31) / 32);
  horizontal_pass<<<dim3(gx, unsigned((rows + 7) / 8)), block, 0, stream>>>(img, horizontal, width,
                                                                            row0, rows, temp);
  check_launch("horizontal_pass (JPEG preprocess)");
  OutputFormat f{};
  f.interleaved = p.layout == GpuPixelLayout::interleaved;
  f.normalize = p.normalize;
  for (int c = 0; c < 3; ++c) f.mean[c] = p.mean[c], f.std[c] = p.std[c];
  vertical_pass<<<dim3(gx, unsigned((height + 7) / 8)), block, 0, stream>>>(temp, vertical, width,
                                                                            height, row0, f, out);
  check_launch("vertical_pass (JPEG preprocess)");
}

void launch_upright_shrink(const StoredRgb& img, int x0, int y0, int width, int height, int factor,
                           uint8_t* out, cudaStream_t stream) {
  const dim3 block(32, 8);
  upright_shrink<<<dim3(unsigned((width + 31) / 32), unsigned((height + 7) / 8)), block, 0, stream>>>(
      img, x0, y0, width, height, factor, out);
  check_launch("upright_shrink (kept photo region)");
}

}  // namespace tandem::cuda
