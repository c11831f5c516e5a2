#pragma once
// What a model found in one photo: tags (a label and the model's score for
// it, 0..1) and, for a detector, the objects with their boxes.
#include <string>
#include <vector>

#include "pipeline/detection.h"

namespace tandem::pipeline {

struct TagScore {
  std::string label;
  float score = 0;
};

// One detected object: box in pixels of the upright full-size photo.
struct DetectedObject {
  std::string label;
  float score = 0;
  Box box;
};

// One photo's result from TagModel::tag.
struct TagResult {
  std::vector<TagScore> tags;           // best first
  std::vector<DetectedObject> objects;  // best first; empty for a classifier
};

}  // namespace tandem::pipeline
