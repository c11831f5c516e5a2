#pragma once
// model.json of a TF.js graph model: the topology (TfNode list), the weights
// manifest (which shards hold which named tensors, and how they were
// quantized), and the signature's input/output names where the converter
// wrote one (top-level "signature" or userDefinedMetadata.signature).
#include <string>
#include <vector>

#include "core/tensor.h"
#include "formats/tfjs/tf_node.h"

namespace tandem::tfjs {

struct WeightSpec {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;    // what the graph sees after dequantization
  std::string stored;          // bytes on disk: "float32", "int32", "bool", "float16", "uint8", "uint16"
  float scale = 1.0f, min = 0.0f;  // uint8/uint16 affine quantization: v = q * scale + min
  size_t group = 0;            // index into WeightsManifest::shard_groups
};

struct TfjsModel {
  std::string path;      // model.json, for errors
  std::string base_dir;  // shards are relative to it
  std::vector<TfNode> nodes;
  std::vector<std::vector<std::string>> shard_groups;  // each group's shard paths, in order
  std::vector<WeightSpec> weights;                     // in manifest order (= byte order)
  std::vector<std::string> signature_inputs;   // tensor names, e.g. "input:0" or "images"
  std::vector<std::string> signature_outputs;
};

// Parses and validates model.json (not the shards). Throws Error naming the
// file, and the node where one is at fault.
TfjsModel parse_model_json(const std::string& path);

// Reads every shard and returns one tensor per weight, dequantized to its
// dtype, in manifest order. Shard sizes must match the manifest exactly.
std::vector<Tensor> load_weights(const TfjsModel& model);

// Bytes a weight occupies in its shard (checked against overflow).
uint64_t stored_bytes(const WeightSpec& w);

}  // namespace tandem::tfjs
