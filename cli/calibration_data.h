#pragma once
// Calibration samples for post-training quantization: a .npy file is the
// network's input itself ([N, ...], cut into batches), a folder's photos
// go through the preprocessing `tag` gives the model (a classifier's
// resize, crop and normalization; the detector's stretch), so the ranges
// are those of the inputs it will see.
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::cli {

struct CalibrationSource {
  std::string model;   // resolved path
  std::string source;  // folder of photos or FILE.npy
  int samples = 64, batch = 8, threads = 0;
};

// Batches of equal size (a folder with fewer photos than one batch gives
// one short batch). Error when none can be made; files skipped are named
// on stderr.
std::vector<Tensor> calibration_batches(const CalibrationSource& c);

// The photos under `source` (a folder or one file), sorted; a file named
// like a photo that is none, and an entry that cannot be read, are named
// on stderr and left out.
std::vector<std::string> calibration_photos(const std::string& source);

// `samples` ([N, ...]) cut into batches of `batch` rows; a short last one is
// dropped unless it is the only one.
std::vector<Tensor> batches_of(const Tensor& samples, int64_t batch);

}  // namespace tandem::cli
