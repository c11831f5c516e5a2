#pragma once
// A decoded image as a network's input: resize it to (rw, rh) with PIL's
// antialiased resampling (image/resize.h), keep a window of the result, and
// write it as floats straight into a caller's buffer (one batch slot).
// Two recipes:
//   classifier (torchvision): Resize(resize) -> CenterCrop(crop) ->
//     ToTensor() -> Normalize(mean, std): rw, rh from the shorter side, the
//     window the center crop, three float planes (NCHW);
//   detector: the whole upright image stretched to width x height, the window
//     all of it, RGB interleaved (NHWC), raw 0..255 values.
// Only the window is computed. cuda/jpeg_preprocess.h restates this
// description for the GPU's JPEG decoders (the cuda layer cannot include
// image/); keep the two in step.
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "image/image.h"
#include "image/resize.h"

namespace tandem::image {

enum class ResizeMode {
  shorter_side,  // torchvision Resize(resize) then CenterCrop(crop)
  stretch,       // to width x height whatever the aspect ratio, nothing cropped
};

enum class PixelLayout {
  planes,       // (3, H, W): R, G and B planes, an NCHW batch slot
  interleaved,  // (H, W, 3): RGB per pixel, an NHWC batch slot
};

struct PreprocessConfig {
  ResizeMode mode = ResizeMode::shorter_side;
  int resize = 256;           // shorter_side: shorter side after resizing, pixels
  int crop = 224;             // shorter_side: square center crop, pixels; <= resize
  int width = 0, height = 0;  // stretch: the output size, pixels
  ResampleFilter filter = ResampleFilter::bilinear;
  PixelLayout layout = PixelLayout::planes;
  // true: ToTensor then Normalize, (x / 255 - mean) / std; false: x itself
  // (0..255 as floats), mean and std unused.
  bool normalize = true;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet, RGB, on x/255
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};

  int output_width() const { return mode == ResizeMode::stretch ? width : crop; }
  int output_height() const { return mode == ResizeMode::stretch ? height : crop; }
};

// A detector's input: the whole image stretched to width x height, RGB
// interleaved, raw 0..255 (bilinear, as PIL's resize defaults to).
PreprocessConfig stretch_config(int width, int height);

struct Size2 {
  int width = 0, height = 0;
};

// torchvision Resize(int): the shorter side becomes `shorter`, the longer
// int(shorter * long / short) (truncated, as Python's int()).
Size2 shorter_side_size(int width, int height, int shorter);

// torchvision CenterCrop's offset: int(round((size - crop) / 2)), where
// Python rounds halves to even (117 / 2 = 58.5 -> 58).
int center_crop_offset(int size, int crop);

// Where a width x height image goes: resized to resized_width x
// resized_height, of which the window [x0, x0 + config.output_width()) x
// [y0, y0 + config.output_height()) is kept.
struct PreprocessWindow {
  int resized_width = 0, resized_height = 0;
  int x0 = 0, y0 = 0;
};
PreprocessWindow preprocess_window(const PreprocessConfig& config, int width, int height);

// One per thread: keeps filter weights, intermediate rows and the
// float conversion table between images, so steady state allocates nothing.
class Preprocessor {
 public:
  // Throws tandem::Error on an invalid config (crop > resize, std == 0, ...).
  explicit Preprocessor(const PreprocessConfig& config = {});

  const PreprocessConfig& config() const { return config_; }
  // Floats run() writes: 3 x output_width x output_height.
  size_t output_size() const {
    return 3 * size_t(config_.output_width()) * size_t(config_.output_height());
  }

  // Writes output_size() floats in the config's layout to out (out.size() >=
  // output_size()). A gray image fills R, G and B with its one channel, as
  // PIL's convert("RGB") would.
  void run(const Image& img, std::span<float> out);

 private:
  PreprocessConfig config_;
  Resampler resampler_;
  std::vector<uint8_t> window_;                  // the window, HWC, 8 bits
  std::array<std::array<float, 256>, 3> table_;  // per channel: u8 -> the float written
};

}  // namespace tandem::image
