#pragma once
// A network's input made on the GPU from an image the GPU's JPEG decoder
// left in device memory, as image/preprocess.h makes it on the CPU: in the
// upright frame of an EXIF orientation, resized to (rw, rh) with PIL's
// antialiased bilinear resampling done exactly as image/resize.cpp does it
// (22-bit fixed-point weights, a horizontal pass rounded to 8 bits, then a
// vertical pass rounded to 8 bits), a window of that kept, and written as
// floats: normalized planes (torchvision's Resize + CenterCrop + ToTensor +
// Normalize, a classifier) or raw 0..255 RGB interleaved (the whole image
// stretched, a detector). The same decoded pixels give the same floats as
// the CPU path. Only the window is computed.
//
// The cuda layer cannot include image/, so the description
// (image::PreprocessConfig) and the PIL weight computation are restated
// here and in cuda/nvjpeg/resample_plan.h; keep them in step.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tandem::cuda {

// image::ResizeMode and image::PixelLayout, restated.
enum class GpuResizeMode {
  shorter_side,  // torchvision Resize(resize) then CenterCrop(crop)
  stretch,       // to width x height whatever the aspect ratio, nothing cropped
};
enum class GpuPixelLayout {
  planes,       // (3, H, W): R, G and B planes (NCHW)
  interleaved,  // (H, W, 3): RGB per pixel (NHWC)
};

struct GpuPreprocessParams {
  GpuResizeMode mode = GpuResizeMode::shorter_side;
  int resize = 256;           // shorter_side: shorter side after resizing, pixels
  int crop = 224;             // shorter_side: square center crop, pixels; <= resize
  int width = 0, height = 0;  // stretch: the output size, pixels
  GpuPixelLayout layout = GpuPixelLayout::planes;
  bool normalize = true;                     // (x / 255 - mean) / std; false: x (0..255) itself
  float mean[3] = {0.485f, 0.456f, 0.406f};  // ImageNet, RGB, on x/255
  float std[3] = {0.229f, 0.224f, 0.225f};
  // Images whose header claims more pixels are refused (decompression bomb
  // guard; image::DecodeOptions::max_pixels has the same default).
  int64_t max_pixels = 100'000'000;

  int output_width() const { return mode == GpuResizeMode::stretch ? width : crop; }
  int output_height() const { return mode == GpuResizeMode::stretch ? height : crop; }
  // Floats one image's input takes.
  size_t output_floats() const { return 3 * size_t(output_width()) * size_t(output_height()); }
};

// Throws tandem::Error on an invalid set (crop > resize, std == 0 while
// normalizing, ...).
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
  const int32_t* start = nullptr;    // [count] first input index
  const int32_t* length = nullptr;   // [count] taps that matter (vertical only)
  const int32_t* weights = nullptr;  // [count * taps]
  int taps = 0;
};

// Enqueues on `stream` the two passes for one image whose output window is
// width x height: the horizontal pass over upright rows [row0, row0 + rows)
// into `temp` (rows * width * 3 bytes), then the vertical pass and the float
// conversion into `out` (p.output_floats() floats in p.layout). Checks the
// launches.
void launch_preprocess(const StoredRgb& img, const DeviceAxis& horizontal,
                       const DeviceAxis& vertical, int row0, int rows, uint8_t* temp,
                       const GpuPreprocessParams& p, float* out, cudaStream_t stream);

// Enqueues on `stream` a width x height RGB image (packed rows, 3 bytes a
// pixel) into `out`: pixel (x, y) the mean, rounded half up, of the
// factor x factor upright pixels of `img` from (x0 + x * factor,
// y0 + y * factor). factor 1 copies the rectangle upright. Checks the launch.
void launch_upright_shrink(const StoredRgb& img, int x0, int y0, int width, int height, int factor,
                           uint8_t* out, cudaStream_t stream);

}  // namespace tandem::cuda
