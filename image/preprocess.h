#pragma once
// torchvision's classification preprocessing on a decoded image:
//   Resize(resize) -> CenterCrop(crop) -> ToTensor() -> Normalize(mean, std)
// with PIL's antialiased resampling (image/resize.h), computing only the
// cropped window of the resize, and writing float planes straight into a
// caller's buffer (one slot of an NCHW batch).
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "image/image.h"
#include "image/resize.h"

namespace tandem::image {

struct PreprocessConfig {
  int resize = 256;  // shorter side after resizing, pixels
  int crop = 224;    // square center crop, pixels; must be <= resize
  ResampleFilter filter = ResampleFilter::bilinear;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet, RGB, on x/255
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

struct Size2 {
  int width = 0, height = 0;
};

// torchvision Resize(int): the shorter side becomes `shorter`, the longer
// int(shorter * long / short) (truncated, as Python's int()).
Size2 shorter_side_size(int width, int height, int shorter);

// torchvision CenterCrop's offset: int(round((size - crop) / 2)), where
// Python rounds halves to even (117 / 2 = 58.5 -> 58).
int center_crop_offset(int size, int crop);

// One per thread: keeps filter weights, intermediate rows and the
// normalisation table between images, so steady state allocates nothing.
class Preprocessor {
 public:
  // Throws tandem::Error on an invalid config (crop > resize, std == 0, ...).
  explicit Preprocessor(const PreprocessConfig& config = {});

  const PreprocessConfig& config() const { return config_; }
  // Floats run() writes: 3 planes of crop x crop.
  size_t output_size() const { return 3 * size_t(config_.crop) * size_t(config_.crop); }

  // Writes (3, crop, crop) floats, planes R, G, B, row-major, to out
  // (out.size() >= output_size()). A gray image fills all three planes with
  // its one channel, as PIL's convert("RGB") would.
  void run(const Image& img, std::span<float> out);

 private:
  PreprocessConfig config_;
  Resampler resampler_;
  std::vector<uint8_t> window_;           // crop x crop x channels, HWC
  std::array<std::array<float, 256>, 3> table_;  // u8 -> (u8/255 - mean) / std
};

}  // namespace tandem::image
