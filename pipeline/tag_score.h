#pragma once
// What a model found in one photo: tags (a label and the model's score for
// it, 0..1) and, for a detector, the objects with their boxes.
#include <array>
#include <cstdint>
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

// One face: box and landmarks in pixels of the upright full-size photo
// (landmarks: eyes, nose, mouth, ears, pipeline/face_detector.h), the
// recognition model's descriptor and estimates, and the person it belongs
// to (0: none yet; set by the catalog when it stores the face).
struct FaceRecord {
  float score = 0;
  Box box;
  std::array<std::array<float, 2>, 6> landmarks{};
  std::vector<float> descriptor;
  float age = 0, gender_score = 0;
  int64_t person_id = 0;
  std::string person_name;  // empty: the person has no name (or none yet)
  bool confirmed = false;   // a person put this face in person_id by hand
};

// One photo's result from TagModel::tag.
struct TagResult {
  std::vector<TagScore> tags;           // best first
  std::vector<DetectedObject> objects;  // best first; empty for a classifier
};

}  // namespace tandem::pipeline
