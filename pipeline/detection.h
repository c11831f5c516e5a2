#pragma once
// Object detections and what a photo collection wants from them: boxes in
// image pixels, per-class non-maximum suppression, and tags.
#include <string>
#include <vector>

namespace tandem::pipeline {

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners, pixels, x1 <= x2, y1 <= y2
  float area() const;
};

float iou(const Box& a, const Box& b);

struct Detection {
  int class_id = 0;
  float score = 0;
  Box box;
};

// Keeps the best-scoring boxes that overlap no kept box of the same class by
// more than `iou_threshold`, nor a kept box of any class by more than
// `cross_class_iou` (one object gets one label: a CenterNet peak often
// scores the same box as horse, sheep and cow); at most `max_keep`, best
// first.
std::vector<Detection> non_max_suppression(std::vector<Detection> dets, float iou_threshold,
                                           float cross_class_iou, size_t max_keep);

struct Tag {
  std::string label;
  int count = 0;
  float best_score = 0;
};

// One tag per detected class, best score first (ties: label order).
std::vector<Tag> tags_of(const std::vector<Detection>& dets, const std::vector<std::string>& labels);

// "dog ×1 0.93, bicycle ×1 0.88"
std::string format_tags(const std::vector<Tag>& tags);

// labels[id], or "class <id>" for ids outside the list.
std::string label_of(int class_id, const std::vector<std::string>& labels);

}  // namespace tandem::pipeline
