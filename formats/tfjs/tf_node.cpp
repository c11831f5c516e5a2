#include "formats/tfjs/tf_node.h"

#include <charconv>

namespace tandem::tfjs {

namespace {

using nlohmann::json;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // '-' and '_': the URL-safe alphabet
  if (c == '/' || c == '_') return 63;
  return -1;
}

// protobuf-JSON writes int64 as a string ("12") but accepts numbers too.
int64_t json_int(const json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    int64_t r = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), r);
    if (ec == std::errc() && end == s.data() + s.size()) return r;
  }
  throw Error(what + " is not an integer: " + v.dump());
}

}  // namespace

std::string base64_decode(const std::string& in) {
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = base64_value(c);
    check(v >= 0, "malformed base64 string in model.json");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return out;
}

DType dtype_from_tf(const std::string& name) {
  if (name == "DT_FLOAT" || name == "float32") return DType::f32;
  if (name == "DT_HALF" || name == "float16") return DType::f16;
  if (name == "DT_BFLOAT16") return DType::bf16;
  if (name == "DT_INT32" || name == "int32") return DType::i32;
  if (name == "DT_INT64" || name == "int64") return DType::i64;
  if (name == "DT_INT8" || name == "int8") return DType::i8;
  if (name == "DT_UINT8" || name == "uint8") return DType::u8;
  if (name == "DT_BOOL" || name == "bool") return DType::boolean;
  if (name == "DT_DOUBLE") return DType::f64;
  throw Error::unsupported("unsupported TensorFlow dtype '" + name + "'");
}

std::string TfNode::get_string(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("s") && a["s"].is_string(),
        "attribute '" + key + "' is not a string", context());
  return base64_decode(a["s"].get<std::string>());
}

int64_t TfNode::get_int(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("i"), "attribute '" + key + "' is not an int", context());
  try {
    return json_int(a["i"], "attribute '" + key + "'");
  } catch (const Error& e) {
    throw e.with_context(context());
  }
}

float TfNode::get_float(const std::string& key, float fallback) const {
  if (!has(key)) return fallback;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("f") && a["f"].is_number(),
        "attribute '" + key + "' is not a float", context());
  return a["f"].get<float>();
}

bool TfNode::get_bool(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("b") && a["b"].is_boolean(),
        "attribute '" + key + "' is not a bool", context());
  return a["b"].get<bool>();
}

std::vector<int64_t> TfNode::get_ints(const std::string& key) const {
  std::vector<int64_t> r;
  if (!has(key)) return r;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("list") && a["list"].is_object(),
        "attribute '" + key + "' is not a list", context());
  const json& l = a["list"];
  if (!l.contains("i")) return r;
  check(l["i"].is_array(), "attribute '" + key + "' is not an int list", context());
  try {
    for (const json& v : l["i"]) r.push_back(json_int(v, "attribute '" + key + "'"));
  } catch (const Error& e) {
    throw e.with_context(context());
  }
  return r;
}

std::vector<std::string> TfNode::get_strings(const std::string& key) const {
  std::vector<std::string> r;
  if (!has(key)) return r;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("list") && a["list"].is_object(),
        "attribute '" + key + "' is not a list", context());
  const json& l = a["list"];
  if (!l.contains("s")) return r;
  check(l["s"].is_array(), "attribute '" + key + "' is not a string list", context());
  for (const json& v : l["s"]) {
    check(v.is_string(), "attribute '" + key + "' has a non-string entry", context());
    r.push_back(base64_decode(v.get<std::string>()));
  }
  return r;
}

DType TfNode::get_type(const std::string& key, DType fallback) const {
  if (!has(key)) return fallback;
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("type") && a["type"].is_string(),
        "attribute '" + key + "' is not a type", context());
  try {
    return dtype_from_tf(a["type"].get<std::string>());
  } catch (const Error& e) {
    throw e.with_context(context());
  }
}

Shape TfNode::get_shape(const std::string& key) const {
  check(has(key), "attribute '" + key + "' is missing", context());
  const json& a = attr.at(key);
  check(a.is_object() && a.contains("shape") && a["shape"].is_object(),
        "attribute '" + key + "' is not a shape", context());
  const json& s = a["shape"];
  check_supported(!s.value("unknownRank", false), "inputs of unknown rank are not supported",
                  context());
  Shape shape;
  if (!s.contains("dim")) return shape;
  check(s["dim"].is_array(), "attribute '" + key + "' has a malformed dim list", context());
  try {
    for (const json& d : s["dim"]) {
      check(d.is_object(), "malformed dim");
      int64_t size = d.contains("size") ? json_int(d["size"], "dim size") : -1;
      check(size >= -1 && size <= kMaxDeclaredExtent, "dim size " + std::to_string(size) + " is invalid");
      shape.push_back(size);
    }
  } catch (const Error& e) {
    throw e.with_context(context());
  }
  return shape;
}

}  // namespace tandem::tfjs
