#pragma once
// torchvision's classification preprocessing on the GPU, for an image the
// GPU's JPEG decoder left in device memory:
//   Resize(resize) -> CenterCrop(crop) -> ToTensor() -> Normalize(mean, std)
// in the upright frame of an EXIF orientation, with PIL's antialiased
// bilinear resampling done exactly as image/resize.cpp does it (22-bit
// fixed-point weights, a horizontal pass rounded to 8 bits, then a vertical
// pass rounded to 8 bits), so the same decoded pixels give the same floats
// as the CPU path. Only the cropped window is computed.
//
// The cuda layer cannot include image/, so the parameters and the PIL weight
// computation are restated here (cuda/nvjpeg/resample_plan.h).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tandem::cuda {

struct GpuPreprocessParams {
  int resize = 256;  // shorter side after resizing, pixels
  int crop = 224;    // square center crop, pixels; <= resize
  float mean[3] = {0.485f, 0.456f, 0.406f};  // ImageNet, RGB, on x/255
  float std[3] = {0.229f, 0.224f, 0.225f};
  // Images whose header claims more pixels are refused (decompression bomb
  // guard; image::DecodeOptions::max_pixels has the same default).
  int64_t max_pixels = 100'000'000;
};

// Throws tandem::Error on an invalid set (crop > resize, std == 0, ...).
void check_preprocess_params(const GpuPreprocessParams& p);

// A decoded image in device memory, interleaved 8-bit RGB (3 bytes a pixel),
// as the file stores it, and how to read it upright: upright pixel (x, y) is
// at data + base + x * step_x + y * step_y (bytes; image/orientation.cpp's
// walk, with the row pitch for a row).
struct StoredRgb {
  const uint8_t* data = nullptr;
  ptrdiff_t base = 0, step_x = 3, step_y = 0;
  bool gray = false;  // read channel 0 for all three (a grayscale JPEG)
};

// Builds the walk for `orientation` (1..8) over a stored width x height
// image with `pitch` bytes a row.
StoredRgb stored_rgb(const uint8_t* data, size_t pitch, int width, int height, int orientation, bool gray);

// Filter weights of one axis in device memory (see ResampleAxisPlan).
struct DeviceAxis {
  const int32_t* start = nullptr;    // [crop] first input index
  const int32_t* length = nullptr;   // [crop] taps that matter (vertical only)
  const int32_t* weights = nullptr;  // [crop * taps]
  int taps = 0;
};

// Enqueues on `stream` the two passes for one image: the horizontal pass
// over upright rows [row0, row0 + rows) into `temp` (rows * crop * 3 bytes),
// then the vertical pass and normalisation into `out`, 3 planes (R, G, B) of
// crop x crop floats. Checks the launches.
void launch_preprocess(const StoredRgb& img, const DeviceAxis& horizontal, const DeviceAxis& vertical, int crop,
                       int row0, int rows, uint8_t* temp, const GpuPreprocessParams& p, float* out,
                       cudaStream_t stream);

}  // namespace tandem::cuda
