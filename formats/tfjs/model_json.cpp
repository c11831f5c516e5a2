#include "formats/tfjs/model_json.h"

#include <filesystem>

#include "formats/file_bytes.h"

namespace tandem::tfjs {

namespace {

using nlohmann::json;

// model.json holds topology and manifest only; weights live in shards.
constexpr uint64_t kMaxModelJsonBytes = uint64_t(256) << 20;

const json& member(const json& j, const char* key, const std::string& where) {
  check(j.is_object() && j.contains(key), where + " has no '" + key + "'");
  return j[key];
}

std::string as_string(const json& j, const std::string& what) {
  check(j.is_string(), what + " is not a string");
  return j.get<std::string>();
}

// "name" -> "name"; "^name" (control dependency) -> "" (dropped).
TfNode parse_node(const json& j, size_t index) {
  check(j.is_object(), "node " + std::to_string(index) + " is not an object");
  TfNode n;
  n.name = as_string(member(j, "name", "node " + std::to_string(index)), "node name");
  check(!n.name.empty(), "node " + std::to_string(index) + " has an empty name");
  n.op = as_string(member(j, "op", "node '" + n.name + "'"), "node op");
  if (j.contains("input")) {
    check(j["input"].is_array(), "input list is not an array", n.context());
    for (const json& in : j["input"]) {
      std::string s = as_string(in, "node input");
      check(!s.empty(), "empty input name", n.context());
      if (s[0] != '^') n.inputs.push_back(s);
    }
  }
  if (j.contains("attr")) {
    check(j["attr"].is_object(), "attr is not an object", n.context());
    n.attr = j["attr"];
  }
  return n;
}

Shape parse_weight_shape(const json& j, const std::string& name) {
  check(j.is_array(), "weight '" + name + "' has no shape list");
  Shape s;
  for (const json& d : j) {
    check(d.is_number_integer() && d.get<int64_t>() >= 0 && d.get<int64_t>() < (int64_t(1) << 40),
          "weight '" + name + "' has an invalid extent " + d.dump());
    s.push_back(d.get<int64_t>());
  }
  check(shape_numel(s) < (int64_t(1) << 40), "weight '" + name + "' is too large");
  return s;
}

WeightSpec parse_weight(const json& j, size_t group) {
  WeightSpec w;
  w.group = group;
  w.name = as_string(member(j, "name", "weight entry"), "weight name");
  w.shape = parse_weight_shape(member(j, "shape", "weight '" + w.name + "'"), w.name);
  std::string dtype = as_string(member(j, "dtype", "weight '" + w.name + "'"), "weight dtype");
  check_supported(dtype == "float32" || dtype == "int32" || dtype == "bool",
                  "weight '" + w.name + "' has unsupported dtype '" + dtype + "'");
  w.dtype = dtype_from_tf(dtype);
  w.stored = dtype;
  if (j.contains("quantization")) {
    const json& q = j["quantization"];
    w.stored = as_string(member(q, "dtype", "quantization of '" + w.name + "'"), "quantization dtype");
    check_supported(w.stored == "float16" || w.stored == "uint8" || w.stored == "uint16",
                    "weight '" + w.name + "' has unsupported quantization '" + w.stored + "'");
    if (w.stored != "float16") {
      const json& scale = member(q, "scale", "quantization of '" + w.name + "'");
      const json& min = member(q, "min", "quantization of '" + w.name + "'");
      check(scale.is_number() && min.is_number(), "weight '" + w.name + "' has a non-numeric scale/min");
      w.scale = scale.get<float>();
      w.min = min.get<float>();
    }
  }
  return w;
}

void parse_manifest(const json& manifest, TfjsModel& m) {
  check(manifest.is_array(), "weightsManifest is not an array");
  for (const json& group : manifest) {
    size_t gi = m.shard_groups.size();
    std::vector<std::string> paths;
    for (const json& p : member(group, "paths", "weightsManifest group"))
      paths.push_back(as_string(p, "shard path"));
    m.shard_groups.push_back(std::move(paths));
    const json& weights = member(group, "weights", "weightsManifest group");
    check(weights.is_array(), "weightsManifest group weights is not an array");
    for (const json& w : weights) m.weights.push_back(parse_weight(w, gi));
  }
}

std::vector<std::string> signature_names(const json& sig, const char* which) {
  std::vector<std::string> names;
  if (!sig.is_object() || !sig.contains(which) || !sig[which].is_object()) return names;
  for (auto it = sig[which].begin(); it != sig[which].end(); ++it) {
    const json& t = it.value();
    names.push_back(t.is_object() && t.contains("name") && t["name"].is_string()
                        ? t["name"].get<std::string>()
                        : it.key());
  }
  return names;
}

}  // namespace

uint64_t stored_bytes(const WeightSpec& w) {
  uint64_t n = uint64_t(shape_numel(w.shape));
  if (w.stored == "uint8" || w.stored == "bool") return n;
  if (w.stored == "float16" || w.stored == "uint16") return 2 * n;
  return 4 * n;
}

TfjsModel parse_model_json(const std::string& path) {
  const ErrorContext file_ctx{path, "", "", ""};
  try {
    std::string text = read_file_bytes(path, kMaxModelJsonBytes);
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    check(!j.is_discarded(), "not a TF.js model: model.json is not valid JSON");
    check(j.is_object(), "not a TF.js model: model.json is not a JSON object");
    std::string format = j.value("format", std::string("graph-model"));
    check_supported(format == "graph-model",
                    "TF.js '" + format + "' models are not supported (only graph-model)");
    TfjsModel m;
    m.path = path;
    m.base_dir = std::filesystem::path(path).parent_path().string();
    const json& topo = member(j, "modelTopology", "model.json");
    const json& nodes = member(topo, "node", "modelTopology");
    check(nodes.is_array(), "modelTopology.node is not an array");
    for (size_t i = 0; i < nodes.size(); ++i) m.nodes.push_back(parse_node(nodes[i], i));
    if (topo.contains("library") && topo["library"].is_object() &&
        topo["library"].contains("function") && topo["library"]["function"].is_array())
      check_supported(topo["library"]["function"].empty(),
                      "models with control flow functions are not supported");
    parse_manifest(member(j, "weightsManifest", "model.json"), m);
    const json* sig = j.contains("signature") ? &j["signature"] : nullptr;
    if (!sig && j.contains("userDefinedMetadata") && j["userDefinedMetadata"].is_object() &&
        j["userDefinedMetadata"].contains("signature"))
      sig = &j["userDefinedMetadata"]["signature"];
    if (sig) {
      m.signature_inputs = signature_names(*sig, "inputs");
      m.signature_outputs = signature_names(*sig, "outputs");
    }
    return m;
  } catch (const Error& e) {
    throw e.with_context(file_ctx);
  } catch (const json::exception& e) {
    throw Error(std::string("malformed model.json: ") + e.what(), file_ctx);
  }
}

}  // namespace tandem::tfjs
