#include "pipeline/detection.h"

#include <algorithm>
#include <fmt/core.h>
#include <map>

namespace tandem::pipeline {

float Box::area() const { return std::max(0.f, x2 - x1) * std::max(0.f, y2 - y1); }

float iou(const Box& a, const Box& b) {
  Box i{std::max(a.x1, b.x1), std::max(a.y1, b.y1), std::min(a.x2, b.x2), std::min(a.y2, b.y2)};
  float inter = i.area();
  float uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0.f;
}

std::vector<Detection> non_max_suppression(std::vector<Detection> dets, float iou_threshold,
                                           float cross_class_iou, size_t max_keep) {
  std::stable_sort(dets.begin(), dets.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& d : dets) {
    if (kept.size() >= max_keep) break;
    bool suppressed = false;
    for (const Detection& k : kept)
      if (iou(k.box, d.box) > (k.class_id == d.class_id ? iou_threshold : cross_class_iou)) {
        suppressed = true;
        break;
      }
    if (!suppressed) kept.push_back(d);
  }
  return kept;
}

std::string label_of(int class_id, const std::vector<std::string>& labels) {
  return class_id >= 0 && size_t(class_id) < labels.size() ? labels[size_t(class_id)]
                                                           : "class " + std::to_string(class_id);
}

std::vector<Tag> tags_of(const std::vector<Detection>& dets, const std::vector<std::string>& labels) {
  std::map<int, Tag> by_class;
  for (const Detection& d : dets) {
    Tag& t = by_class[d.class_id];
    t.label = label_of(d.class_id, labels);
    ++t.count;
    t.best_score = std::max(t.best_score, d.score);
  }
  std::vector<Tag> tags;
  for (auto& [id, t] : by_class) tags.push_back(t);
  std::stable_sort(tags.begin(), tags.end(),
                   [](const Tag& a, const Tag& b) { return a.best_score > b.best_score; });
  return tags;
}

std::string format_tags(const std::vector<Tag>& tags) {
  std::string s;
  for (const Tag& t : tags) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{} \u00d7{} {:.2f}", t.label, t.count, t.best_score);
  }
  return s;
}

}  // namespace tandem::pipeline
