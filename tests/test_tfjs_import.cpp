// TF.js graph-model import: weights dequantized by the TF.js format's
// definition, and hostile model.json files rejected with an Error naming the
// file and the node (never a crash). Whole real models are compared with
// TensorFlow.js itself in tests/tfjs/compare_tfjs.py.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "core/half.h"
#include "formats/tfjs/tfjs_importer.h"
#include "graph/session.h"
#include "temp_dir.h"

namespace tandem {
namespace {

using nlohmann::json;
using testing::TempDir;

json node(const std::string& name, const std::string& op, std::vector<std::string> inputs = {},
          json attr = json::object()) {
  return {{"name", name}, {"op", op}, {"input", inputs}, {"attr", attr}};
}

json placeholder(const std::string& name, std::vector<int> shape) {
  json dims = json::array();
  for (int d : shape) dims.push_back({{"size", std::to_string(d)}});
  return node(name, "Placeholder", {}, {{"dtype", {{"type", "DT_FLOAT"}}}, {"shape", {{"shape", {{"dim", dims}}}}}});
}

json model(json nodes, json weights, const std::string& shard = "w.bin") {
  return {{"format", "graph-model"},
          {"modelTopology", {{"node", nodes}}},
          {"weightsManifest", json::array({{{"paths", {shard}}, {"weights", weights}}})}};
}

std::string bytes_of(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// x + w for a [4] input: with x = 0 the output is w as tandem dequantized it.
std::vector<float> dequantized(const TempDir& dir, const json& weight, const std::string& shard) {
  json m = model(json::array({placeholder("x", {4}), node("w", "Const"), node("y", "AddV2", {"x", "w"})}),
                 json::array({weight}));
  dir.write("w.bin", shard);
  std::string path = dir.write("model.json", m.dump());
  Session s(load_tfjs(path));
  Tensor y = s.run({Tensor::zeros(DType::f32, {4})})[0];
  return {y.data<float>(), y.data<float>() + 4};
}

// TF.js format: uint8 quantized q -> q * scale + min.
TEST(TfjsImport, Uint8WeightsDequantizeAsScaleTimesQPlusMin) {
  TempDir dir("tfjs");
  uint8_t q[4] = {0, 1, 128, 255};
  json w = {{"name", "w"}, {"shape", {4}}, {"dtype", "float32"},
            {"quantization", {{"dtype", "uint8"}, {"scale", 0.5}, {"min", -3.0}}}};
  std::vector<float> got = dequantized(dir, w, bytes_of(q, 4));
  std::vector<float> want = {-3.0f, -2.5f, 61.0f, 124.5f};
  EXPECT_EQ(got, want);
}

// float16 quantization stores IEEE half floats.
TEST(TfjsImport, Float16WeightsDequantizeToTheirFloatValues) {
  TempDir dir("tfjs");
  std::vector<float> want = {1.0f, -2.5f, 65504.0f, 0.099975586f};
  uint16_t h[4];
  for (int i = 0; i < 4; ++i) h[i] = float_to_f16(want[size_t(i)]);
  json w = {{"name", "w"}, {"shape", {4}}, {"dtype", "float32"}, {"quantization", {{"dtype", "float16"}}}};
  EXPECT_EQ(dequantized(dir, w, bytes_of(h, 8)), want);
}

std::string import_error(const std::string& path) {
  try {
    Graph g = load_tfjs(path);
    Session s(std::move(g));
    s.run({Tensor::zeros(DType::f32, {1, 4, 4, 2})});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& path, const std::vector<std::string>& parts) {
  std::string msg = import_error(path);
  EXPECT_FALSE(msg.empty()) << path << " imported and ran";
  EXPECT_NE(msg.find(path), std::string::npos) << "message lacks the file: " << msg;
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "lacks '" << p << "': " << msg;
}

// A valid conv model: x[1,4,4,2] -> _FusedConv2D(3x3x2x3 + bias, Relu6).
json conv_model(std::vector<int> filter_shape = {3, 3, 2, 3}) {
  json attr = {{"strides", {{"list", {{"i", {"1", "1", "1", "1"}}}}}},
               {"padding", {{"s", "U0FNRQ=="}}},  // SAME
               {"fused_ops", {{"list", {{"s", {"Qmlhc0FkZA==", "UmVsdTY="}}}}}}};  // BiasAdd, Relu6
  return model(json::array({placeholder("x", {1, 4, 4, 2}), node("f", "Const"), node("b", "Const"),
                            node("conv", "_FusedConv2D", {"x", "f", "b"}, attr)}),
               json::array({{{"name", "f"}, {"shape", filter_shape}, {"dtype", "float32"}},
                            {{"name", "b"}, {"shape", {3}}, {"dtype", "float32"}}}));
}

std::string conv_shard(size_t filter_floats = 54) { return std::string((filter_floats + 3) * 4, '\0'); }

TEST(TfjsImport, ValidConvModelRuns) {
  TempDir dir("tfjs");
  dir.write("w.bin", conv_shard());
  EXPECT_EQ(import_error(dir.write("model.json", conv_model().dump())), "");
}

TEST(TfjsImport, MalformedJsonIsAnError) {
  TempDir dir("tfjs");
  expect_error(dir.write("a.json", "{\"format\": \"graph-model\", \"modelTopology\": {"), {"not valid JSON"});
  expect_error(dir.write("b.json", "[1, 2]"), {"not a JSON object"});
  expect_error(dir.write("c.json", "{}"), {"modelTopology"});
  expect_error(dir.write("d.json", R"({"modelTopology": {"node": 5}, "weightsManifest": []})"), {"not an array"});
  expect_error(dir.write("e.json", R"({"modelTopology": {"node": [{"op": "Relu"}]}, "weightsManifest": []})"),
               {"name"});
  expect_error(dir.file("missing.json"), {"missing.json"});
  std::mt19937 rng(7);
  std::string noise(2048, '\0');
  for (char& c : noise) c = char(rng());
  expect_error(dir.write("noise.json", noise), {});
}

TEST(TfjsImport, MissingShardIsAnErrorNamingIt) {
  TempDir dir("tfjs");
  expect_error(dir.write("model.json", conv_model().dump()), {"w.bin"});
}

TEST(TfjsImport, ShardPathsMayNotLeaveTheModelFolder) {
  TempDir dir("tfjs");
  json m = conv_model();
  m["weightsManifest"][0]["paths"] = {"../../etc/passwd"};
  expect_error(dir.write("model.json", m.dump()), {"leaves the model folder"});
  m["weightsManifest"][0]["paths"] = {"/etc/passwd"};
  expect_error(dir.write("model.json", m.dump()), {"not relative"});
}

TEST(TfjsImport, ShardSizeMustMatchTheManifest) {
  TempDir dir("tfjs");
  dir.write("w.bin", conv_shard().substr(0, 100));
  expect_error(dir.write("model.json", conv_model().dump()), {"weight 'f'", "needs bytes"});
  dir.write("w.bin", conv_shard() + "extra");
  expect_error(dir.write("model.json", conv_model().dump()), {"manifest describes"});
}

TEST(TfjsImport, WeightShapeThatDoesNotFitTheOpIsAnErrorNamingTheNode) {
  TempDir dir("tfjs");
  dir.write("w.bin", conv_shard(3 * 3 * 5 * 3));
  expect_error(dir.write("model.json", conv_model({3, 3, 5, 3}).dump()), {"conv"});
  dir.write("w.bin", conv_shard(9 * 2 * 3));
  expect_error(dir.write("model.json", conv_model({9, 2, 3}).dump()), {"conv"});
}

TEST(TfjsImport, UnsupportedOpIsNamed) {
  TempDir dir("tfjs");
  json m = model(json::array({placeholder("x", {1, 4, 4, 2}), node("weird", "NonMaxSuppressionV5", {"x"})}),
                 json::array());
  dir.write("w.bin", "");
  std::string msg = import_error(dir.write("model.json", m.dump()));
  EXPECT_NE(msg.find("weird"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NonMaxSuppressionV5"), std::string::npos) << msg;
}

TEST(TfjsImport, BrokenGraphsAreErrors) {
  TempDir dir("tfjs");
  dir.write("w.bin", "");
  json cycle = model(json::array({placeholder("x", {1, 4, 4, 2}), node("a", "Relu", {"b"}), node("b", "Relu", {"a"})}),
                     json::array());
  expect_error(dir.write("cycle.json", cycle.dump()), {"cycle"});
  json dangling = model(json::array({placeholder("x", {1, 4, 4, 2}), node("a", "Relu", {"nowhere"})}), json::array());
  expect_error(dir.write("dangling.json", dangling.dump()), {"nowhere", "'a'"});
  json no_weight = model(json::array({placeholder("x", {1, 4, 4, 2}), node("c", "Const"), node("a", "AddV2", {"x", "c"})}),
                         json::array());
  expect_error(dir.write("noweight.json", no_weight.dump()), {"'c'", "weights manifest"});
  json bad_attr = conv_model();
  bad_attr["modelTopology"]["node"][3]["attr"]["strides"] = {{"list", {{"i", {"one"}}}}};
  dir.write("w.bin", conv_shard());
  expect_error(dir.write("badattr.json", bad_attr.dump()), {"'conv'", "strides"});
  json bad_b64 = conv_model();
  bad_b64["modelTopology"]["node"][3]["attr"]["padding"] = {{"s", "!!!"}};
  expect_error(dir.write("badb64.json", bad_b64.dump()), {"base64"});
}

}  // namespace
}  // namespace tandem
