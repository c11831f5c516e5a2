#pragma once
// One tag of a photo: a label and the model's score for it (0..1).
#include <string>

namespace tandem::pipeline {

struct TagScore {
  std::string label;
  float score = 0;
};

}  // namespace tandem::pipeline
