#pragma once
// The detect command's options and body, shared with `classify`, which
// detects when it is given no classification model.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.h"
#include "pipeline/detector.h"

namespace tandem::cli {

struct DetectOptions {
  std::vector<std::string> images;
  std::string model;  // empty: pipeline::kDefaultModel
  bool json = false;
  bool boxes = false;
  int batch = 4;
  float min_score = 0.25f;
  float iou = 0.5f;
  CommonOptions common;
};

// Adds every option but --model.
void add_detect_options(CLI::App* sub, DetectOptions& o);
int detect_command(DetectOptions& o);

// One object as `detect --json` and `tag --json` print it: label, score (to
// 0.001) and box [x1, y1, x2, y2] (pixels of the upright full-size photo, to
// 0.1).
nlohmann::json object_json(const std::string& label, float score, const pipeline::Box& box);

}  // namespace tandem::cli
