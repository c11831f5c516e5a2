#pragma once
// Host-side geometry of the GPU preprocessing (cuda/jpeg_preprocess.h): the
// resized size and output window (torchvision's resize and center crop, or
// a stretch to the output size) and PIL's antialiased bilinear filter
// weights, computed with the same double-precision expressions as
// image/preprocess.cpp and image/resize.cpp (which the cuda layer may not
// include), so the GPU reproduces the CPU path's integers exactly.
#include <cstdint>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/jpeg_preprocess.h"

namespace tandem::cuda {

// PIL's precompute_coeffs for output positions [first, first + count) of an
// axis resized from in_size to out_size with the triangle filter: weights
// in 22-bit fixed point, `taps` a position. With `padded` every position
// has exactly `taps` taps inside [0, in_size) (zero weights fill the gap).
struct ResampleAxisPlan {
  int taps = 0;
  std::vector<int32_t> start;    // [count] first input index
  std::vector<int32_t> length;   // [count] taps that matter
  std::vector<int32_t> weights;  // [count * taps]
};
ResampleAxisPlan plan_resample_axis(int in_size, int out_size, int first, int count, bool padded);

// Everything one image's preprocessing needs besides its pixels.
struct PreprocessPlan {
  int upright_width = 0, upright_height = 0;  // after the EXIF orientation
  int row0 = 0, rows = 0;  // upright input rows the vertical taps read
  ResampleAxisPlan horizontal, vertical;
};

// For a stored width x height image shown under `orientation` (1..8).
// Throws tandem::Error on non-positive sizes or an orientation outside 1..8.
PreprocessPlan plan_preprocess(int stored_width, int stored_height, int orientation, const GpuPreprocessParams& p);

// A plan with its filter weights in device memory, one buffer [h start |
// h weights | v start | v length | v weights], for every image of its
// geometry.
struct DevicePreprocessPlan {
  PreprocessPlan plan;
  std::vector<int32_t> host;  // the upload's source, alive while the copy runs
  DeviceBuffer device;
  DeviceAxis horizontal, vertical;  // point into `device`
};

// Enqueues the weights' upload on `stream`: kernels enqueued after it on
// that stream read them. Throws tandem::Error on a CUDA error.
DevicePreprocessPlan upload_preprocess_plan(PreprocessPlan plan, cudaStream_t stream);

}  // namespace tandem::cuda
