#pragma once
// The detect command's options and body, shared with `classify`, which
// detects when it is given no classification model.
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

}  // namespace tandem::cli
