#pragma once
// One node of a TF.js graph model (model.json "modelTopology.node"), as the
// converter wrote it: a TensorFlow GraphDef node in protobuf-JSON form.
// Attribute values keep their JSON form; tf_attrs.h reads them with checks,
// since every field comes from an untrusted file.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace tandem::tfjs {

struct TfNode {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // data inputs "node" or "node:k"; control inputs dropped
  nlohmann::json attr = nlohmann::json::object();

  ErrorContext context() const { return {"", name, op, ""}; }

  bool has(const std::string& key) const { return attr.contains(key); }
  // Typed getters; `fallback` when the attribute is absent, Error when it is
  // present with another type.
  std::string get_string(const std::string& key, const std::string& fallback = "") const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  float get_float(const std::string& key, float fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::vector<int64_t> get_ints(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  // A DT_* type attribute ("T", "DstT", ...) as tandem's dtype.
  DType get_type(const std::string& key, DType fallback) const;
  // A TensorShapeProto attribute ("shape" of a Placeholder): -1 for unknown
  // extents; throws Error::unsupported for an unknown rank.
  Shape get_shape(const std::string& key) const;
};

// The tensor dtype named by a TF DataType enum ("DT_FLOAT") or by a TF.js
// weight dtype ("float32"); throws Error::unsupported for others.
DType dtype_from_tf(const std::string& name);

// RFC 4648 base64 (protobuf-JSON encodes `bytes` fields, such as TF string
// attributes, this way). Throws Error on a malformed string.
std::string base64_decode(const std::string& in);

}  // namespace tandem::tfjs
