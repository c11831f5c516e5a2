#include "pipeline/centernet.h"

#include <algorithm>

namespace tandem::pipeline {

namespace {

// heat[y, x, c] is the maximum of its 3x3 neighbourhood (TF MaxPool SAME:
// positions outside the map do not count).
bool is_peak(const HeatmapView& v, int y, int x, int c) {
  const float h = v.heat[(size_t(y) * v.width + x) * v.classes + c];
  for (int yy = std::max(0, y - 1); yy <= std::min(v.height - 1, y + 1); ++yy)
    for (int xx = std::max(0, x - 1); xx <= std::min(v.width - 1, x + 1); ++xx)
      if (v.heat[(size_t(yy) * v.width + xx) * v.classes + c] > h) return false;
  return true;
}

}  // namespace

std::vector<Detection> decode_centernet(const HeatmapView& v, float stride, int max_peaks,
                                        float min_score) {
  struct Peak {
    float score;
    size_t index;  // (y * width + x) * classes + c
  };
  std::vector<Peak> peaks;
  const size_t n = size_t(v.height) * v.width * v.classes;
  for (size_t i = 0; i < n; ++i) {
    // Below the threshold nothing can be kept: skip the 3x3 test.
    if (v.heat[i] < min_score) continue;
    size_t cell = i / size_t(v.classes);
    if (is_peak(v, int(cell / size_t(v.width)), int(cell % size_t(v.width)), int(i % size_t(v.classes))))
      peaks.push_back({v.heat[i], i});
  }
  size_t k = std::min(peaks.size(), size_t(std::max(0, max_peaks)));
  std::partial_sort(peaks.begin(), peaks.begin() + long(k), peaks.end(), [](const Peak& a, const Peak& b) {
    return a.score > b.score || (a.score == b.score && a.index < b.index);
  });
  std::vector<float> score(k);
  std::vector<int64_t> index(k);
  for (size_t j = 0; j < k; ++j) score[j] = peaks[j].score, index[j] = int64_t(peaks[j].index);
  return boxes_of_peaks({score.data(), index.data(), int(k)}, v.wh, v.height, v.width, v.classes, stride, min_score);
}

std::vector<Detection> boxes_of_peaks(const PeakList& peaks, const float* wh, int height, int width, int classes,
                                      float stride, float min_score) {
  std::vector<Detection> dets;
  const int64_t cells = int64_t(height) * width;
  for (int j = 0; j < peaks.count; ++j) {
    // A zero is a masked non-peak that TopK ranked when there were fewer than k peaks.
    if (!(peaks.score[j] >= min_score) || !(peaks.score[j] > 0.f)) continue;
    const int64_t i = peaks.index[j];
    if (i < 0 || i >= cells * classes) continue;
    const int64_t cell = peaks.class_major ? i % cells : i / classes;
    const int class_id = int(peaks.class_major ? i / cells : i % classes);
    float x = float(cell % width) * stride, y = float(cell / width) * stride;
    const float* d = wh + cell * 4;
    Detection det;
    det.class_id = class_id;
    det.score = peaks.score[j];
    det.box = {x - d[0], y - d[1], x + d[2], y + d[3]};
    dets.push_back(det);
  }
  return dets;
}

}  // namespace tandem::pipeline
