#pragma once
// Where tandem finds the models scripts/setup installs (the TF.js models of
// @vladmandic/human, see scripts/install-models): $TANDEM_MODELS, else
// ~/.cache/tandem/models. A model is named by its file stem ("centernet").
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::pipeline {

// The name of the model every command uses when given none.
inline constexpr const char* kDefaultModel = "centernet";

std::string models_dir();

struct InstalledModel {
  std::string name;         // "centernet"
  std::string path;         // .../centernet.json
  std::string task;         // "objects (COCO, 80 classes)", ...; "" if unknown
  uint64_t bytes = 0;       // model.json + weight files
};

// Every *.json model in models_dir(), sorted by name; empty if none.
std::vector<InstalledModel> installed_models();

// A path as given (an existing file), or an installed model's name. Throws
// Error saying how to install models when neither exists.
std::string resolve_model(const std::string& name_or_path);

// The files beside a model that may hold its class names, in the order they
// are tried: <dir>/<stem>.labels (scripts/install-models writes
// centernet.labels), then <dir>/coco.names.
std::vector<std::string> label_files_beside(const std::string& model_path);

// The detector's COCO class names: from the files beside the model, else
// the system-wide lists (image::coco_labels). Throws Error naming every
// place tried and how to install them.
std::vector<std::string> detector_labels(const std::string& model_path);

}  // namespace tandem::pipeline
