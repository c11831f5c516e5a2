// TF.js graph models: model.json (topology, weights manifest, signature) and
// its weight shards, imported and prepared as `tandem tag` prepares the
// shipped detector. An input is model.json's text, a NUL byte, then the
// shards' bytes, split evenly over the shard files the manifest names (so
// model.json + "\0" + model.bin, the shipped models' form, is a seed as it is).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "formats/tfjs/tfjs_importer.h"
#include "fuzz/model_target.h"

using namespace tandem;

namespace {

// The manifest's shard names that are plain file names (the model's own
// folder is the scratch folder; the loader is what must refuse the rest).
std::vector<std::string> shard_names(const std::string& json_text) {
  std::vector<std::string> names;
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object() || !j.contains("weightsManifest") || !j["weightsManifest"].is_array()) return names;
  for (const auto& group : j["weightsManifest"]) {
    if (!group.is_object() || !group.contains("paths") || !group["paths"].is_array()) continue;
    for (const auto& p : group["paths"]) {
      if (!p.is_string()) continue;
      const std::string name = p.get<std::string>();
      if (!name.empty() && name.size() < 64 && name.find('/') == std::string::npos && name != "." &&
          name != ".." && name != "model.json")
        names.push_back(name);
    }
  }
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t json_size = nul ? size_t(nul - data) : size;
  const std::string json_text(reinterpret_cast<const char*>(data), json_size);
  std::span<const uint8_t> shards;
  if (nul) shards = {nul + 1, size - json_size - 1};

  static std::vector<std::string> written;  // the last input's shards, removed
  for (const std::string& name : written) std::filesystem::remove(fuzz::scratch_dir() / name);
  written = shard_names(json_text);
  const size_t per_shard = written.empty() ? 0 : (shards.size() + written.size() - 1) / written.size();
  for (size_t i = 0; i < written.size(); ++i) {
    const size_t begin = std::min(shards.size(), i * per_shard);
    fuzz::write_scratch(written[i], shards.subspan(begin, std::min(per_shard, shards.size() - begin)));
  }
  const std::string path = fuzz::write_scratch("model.json", {data, json_size});
  fuzz::import_and_prepare([&] { return load_tfjs(path); });
  return 0;
}
