#pragma once
// CenterNet's decoding (Zhou et al., "Objects as Points"), as the graph of
// the shipped MobileNetV3 CenterNet does it after its heads, in C++ so that
// a batch of images runs through the network at once (the graph's own
// decoding assumes batch 1):
//   peaks = heat where heat == maxpool3x3(heat)   (per class)
//   the k best peaks over (y, x, class)
//   box = (x*s - l, y*s - t, x*s + r, y*s + b), (l, t, r, b) = wh[y, x]
// where s is the input-to-heatmap stride. Boxes are in network-input pixels.
#include <vector>

#include "pipeline/detection.h"

namespace tandem::pipeline {

struct HeatmapView {
  const float* heat = nullptr;  // [height, width, classes], NHWC of one image
  const float* wh = nullptr;    // [height, width, 4]
  int height = 0, width = 0, classes = 0;
};

// The `max_peaks` best peaks (ties: lower flat index first, like TF's
// top_k), with score >= min_score.
std::vector<Detection> decode_centernet(const HeatmapView& v, float stride, int max_peaks,
                                        float min_score);

// Peaks already chosen, best first (by the graph: pipeline/detector.cpp has
// the network itself find and rank them, so only k of them leave the
// device). index: flat (y * width + x) * classes + c into the heat map.
struct PeakList {
  const float* score = nullptr;
  const int64_t* index = nullptr;
  int count = 0;
  // Flat indices of a [classes, h, w] map (class * h * w + cell) rather than
  // of an [h, w, classes] one (cell * classes + class).
  bool class_major = false;
};

// Boxes of the peaks with score >= min_score; wh is [height, width, 4].
// Indices outside the map are skipped.
std::vector<Detection> boxes_of_peaks(const PeakList& peaks, const float* wh, int height, int width, int classes,
                                      float stride, float min_score);

}  // namespace tandem::pipeline
