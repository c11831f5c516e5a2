#include "pipeline/model_store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "image/labels.h"

namespace tandem::pipeline {

namespace fs = std::filesystem;

namespace {

// What the shipped models do (human's docs); others are listed with no task.
std::string task_of(const std::string& name) {
  if (name == "centernet") return "objects: COCO 80 classes, MobileNetV3 CenterNet, 512x512";
  if (name == "blazeface") return "faces: BlazeFace boxes + 6 landmarks, 256x256";
  if (name == "emotion") return "face emotion: 7 classes, 64x64 gray";
  if (name == "faceres") return "face: age, gender, 1024-d descriptor, 224x224";
  return "";
}

uint64_t model_bytes(const fs::path& json) {
  std::error_code ec;
  uint64_t total = fs::file_size(json, ec);
  fs::path bin = json;
  bin.replace_extension(".bin");
  if (uint64_t b = fs::file_size(bin, ec); !ec) total += b;
  return total;
}

}  // namespace

std::string models_dir() {
  if (const char* env = std::getenv("TANDEM_MODELS"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".cache" / "tandem" / "models").string();
}

std::vector<InstalledModel> installed_models() {
  std::vector<InstalledModel> r;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(models_dir(), ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    std::string name = e.path().stem().string();
    r.push_back({name, e.path().string(), task_of(name), model_bytes(e.path())});
  }
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return r;
}

std::string resolve_model(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  bool plain_name = name_or_path.find('/') == std::string::npos && !name_or_path.empty();
  if (plain_name) {
    fs::path p = fs::path(models_dir()) / (name_or_path + ".json");
    if (fs::is_regular_file(p, ec)) return p.string();
    throw Error("model '" + name_or_path + "' is not installed in " + models_dir() +
                " (scripts/setup or scripts/install-models installs the shipped models)");
  }
  throw Error("model file '" + name_or_path + "' does not exist");
}

std::vector<std::string> label_files_beside(const std::string& model_path) {
  const fs::path model(model_path);
  const fs::path dir = model.parent_path();
  return {(dir / (model.stem().string() + ".labels")).string(), (dir / "coco.names").string()};
}

std::vector<std::string> detector_labels(const std::string& model_path) {
  try {
    return image::coco_labels({label_files_beside(model_path)});
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                " (scripts/install-models installs the detector's class names beside it)");
  }
}

}  // namespace tandem::pipeline
