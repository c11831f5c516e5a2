// The two resampling passes of cuda/jpeg_preprocess.h. Integer arithmetic
// identical to image/resize.cpp (accumulate from half a unit, shift by 22,
// clamp to 0..255) and normalisation with the same float32 operations as
// image/preprocess.cpp's table, so equal input pixels give equal outputs.
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

struct Normalize {
  float mean[3], std[3];
};

// temp[r][j][c] for r in [0, rows), j in [0, crop): upright row row0 + r
// filtered horizontally at output column j.
__global__ void horizontal_pass(StoredRgb img, DeviceAxis h, int crop, int row0, int rows, uint8_t* temp) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= crop || r >= rows) return;
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
  uint8_t* d = temp + (size_t(r) * size_t(crop) + size_t(j)) * 3;
  d[0] = clip8(a0);
  d[1] = clip8(a1);
  d[2] = clip8(a2);
}

// out[c][i][j]: the vertical filter over temp's rows, rounded to 8 bits,
// then (x / 255 - mean) / std.
__global__ void vertical_pass(const uint8_t* temp, DeviceAxis v, int crop, int row0, Normalize n, float* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= crop || i >= crop) return;
  const int32_t* w = v.weights + size_t(i) * size_t(v.taps);
  const size_t row_bytes = size_t(crop) * 3;
  const uint8_t* s = temp + size_t(v.start[i] - row0) * row_bytes + size_t(j) * 3;
  int32_t acc[3] = {kHalf, kHalf, kHalf};
  for (int t = 0; t < v.length[i]; ++t, s += row_bytes) {
    const int32_t k = w[t];
    for (int c = 0; c < 3; ++c) acc[c] += int32_t(s[c]) * k;
  }
  const size_t plane = size_t(crop) * size_t(crop);
  for (int c = 0; c < 3; ++c) {
    // __fdiv_rn/__fsub_rn: IEEE float32 steps, never contracted or
    // approximated, as the CPU's table computes them.
    const float x = __fdiv_rn(float(clip8(acc[c])), 255.0f);
    out[size_t(c) * plane + size_t(i) * size_t(crop) + size_t(j)] = __fdiv_rn(__fsub_rn(x, n.mean[c]), n.std[c]);
  }
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

void launch_preprocess(const StoredRgb& img, const DeviceAxis& horizontal, const DeviceAxis& vertical, int crop,
                       int row0, int rows, uint8_t* temp, const GpuPreprocessParams& p, float* out,
                       cudaStream_t stream) {
  const dim3 block(32, 8);
  const unsigned gx = unsigned((crop + 31) / 32);
  horizontal_pass<<<dim3(gx, unsigned((rows + 7) / 8)), block, 0, stream>>>(img, horizontal, crop, row0, rows, temp);
  check_launch("horizontal_pass (JPEG preprocess)");
  Normalize n{};
  for (int c = 0; c < 3; ++c) n.mean[c] = p.mean[c], n.std[c] = p.std[c];
  vertical_pass<<<dim3(gx, unsigned((crop + 7) / 8)), block, 0, stream>>>(temp, vertical, crop, row0, n, out);
  check_launch("vertical_pass (JPEG preprocess)");
}

}  // namespace tandem::cuda
