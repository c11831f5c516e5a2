// JSONL and CSV exports read back by independent parsers: nlohmann-json for
// each JSON line, Python's csv module (RFC 4180, strict) for the CSV, with
// paths holding commas, quotes, line breaks and non-ASCII UTF-8, and
// objects whose labels hold spaces.
#include <gtest/gtest.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "catalog_test_util.h"
#include "core/error.h"
#include "pipeline/exports.h"
#include "temp_dir.h"

using namespace tandem::pipeline;
using tandem::testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<FileRecord> awkward_records() {
  std::vector<FileRecord> v = tandem::testing::synthetic_records(20, 0);
  FileRecord r = v[0];
  r.path = "/photos/a,b/IMG \"1\", final.jpg";
  r.tags = {{"dog", 0.87f}, {"traffic light", 0.5f}, {"hot dog", 0.123456789f}};
  r.objects = {{"dog", 0.87f, Box{12.5f, 30, 410.25f, 520}},
               {"traffic light", 0.5f, Box{0, 0.1f, 1e-3f, 639.99994f}},
               {"hot dog", 0.123456789f, Box{1.f / 3.f, 2.f / 3.f, 100.f / 7.f, 479}}};
  v.push_back(r);
  r.path = "/photos/line\nbreak\r\nhere.jpg";
  r.tags = {};
  r.objects = {};
  r.meta.taken_at = "2021-07-04T18:30:05";
  r.meta.make = "Canon, Inc. \"EOS\"";
  r.meta.model = "EOS R6";
  r.meta.latitude = -33.8567844;
  r.meta.longitude = 151.213108;
  v.push_back(r);
  r.meta = {};
  r.path = "/fotos/Ürlaub/日本 😀.jpg";
  r.tags = {{"café", 1e-5f}};
  v.push_back(r);
  r.path = "/x/bad.jpg";
  r.ok = false;
  r.error_kind = "decode";
  r.error = "JPEG: bad \"marker\", at byte 12\nsecond line";
  r.tags = {};
  v.push_back(r);
  return v;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

float parse_float(const std::string& s) {
  float f = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), f);
  EXPECT_TRUE(ec == std::errc() && end == s.data() + s.size()) << s;
  return f;
}

}  // namespace

TEST(Exports, JsonLinesParseBackToTheRecords) {
  TempDir dir("exports");
  auto records = awkward_records();
  std::string path = dir.file("tags.jsonl");
  write_jsonl(path, records);
  std::istringstream in(read_all(path));
  std::string line;
  size_t i = 0;
  for (; std::getline(in, line); ++i) {
    ASSERT_LT(i, records.size());
    const FileRecord& r = records[i];
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("path"), r.path);
    EXPECT_EQ(j.at("model"), r.model_id);
    EXPECT_EQ(j.at("ok"), r.ok);
    EXPECT_EQ(j.contains("error"), !r.ok);
    if (!r.ok) {
      EXPECT_EQ(j.at("error"), r.error);
      EXPECT_EQ(j.at("error_kind"), r.error_kind);
    }
    ASSERT_EQ(j.at("tags").size(), r.tags.size()) << r.path;
    for (size_t k = 0; k < r.tags.size(); ++k) {
      EXPECT_EQ(j["tags"][k].at("label"), r.tags[k].label);
      EXPECT_EQ(j["tags"][k].at("score").get<float>(), r.tags[k].score);  // exact float
    }
    const auto& meta = j.at("meta");
    EXPECT_EQ(meta.at("taken_at").is_null(), r.meta.taken_at.empty());
    if (!r.meta.taken_at.empty()) EXPECT_EQ(meta.at("taken_at"), r.meta.taken_at);
    if (!r.meta.make.empty()) EXPECT_EQ(meta.at("make"), r.meta.make);
    EXPECT_EQ(meta.at("latitude").is_null(), !r.meta.latitude);
    if (r.meta.latitude) EXPECT_EQ(meta.at("latitude").get<double>(), *r.meta.latitude);  // exact double
    EXPECT_TRUE(meta.at("iso").is_null());
    ASSERT_EQ(j.at("objects").size(), r.objects.size()) << r.path;
    for (size_t k = 0; k < r.objects.size(); ++k) {
      const DetectedObject& o = r.objects[k];
      const auto& jo = j["objects"][k];
      EXPECT_EQ(jo.at("label"), o.label);
      EXPECT_EQ(jo.at("score").get<float>(), o.score);  // exact floats
      EXPECT_EQ(jo.at("box").get<std::vector<float>>(),
                (std::vector<float>{o.box.x1, o.box.y1, o.box.x2, o.box.y2}));
    }
    EXPECT_EQ(j.at("size"), r.size);
    EXPECT_EQ(j.at("width"), r.width);
    EXPECT_EQ(j.at("height"), r.height);
    EXPECT_EQ(j.at("mtime_ns"), r.mtime_ns);
    EXPECT_EQ(j.at("content_hash"), r.content_hash);
    EXPECT_NEAR(j.at("decode_ms").get<double>(), r.decode_ms, 5e-4);
    EXPECT_NEAR(j.at("infer_ms").get<double>(), r.infer_ms, 5e-4);
  }
  EXPECT_EQ(i, records.size());
  // The shortest form: what a reader of the file sees.
  EXPECT_NE(read_all(path).find("{\"label\":\"dog\",\"score\":0.87}"), std::string::npos);
  EXPECT_NE(
      read_all(path).find("{\"label\":\"dog\",\"score\":0.87,\"box\":[12.5,30.0,410.25,520.0]}"),
      std::string::npos);
}

TEST(Exports, JsonLinesReplaceInvalidUtf8) {
  FileRecord r = tandem::testing::synthetic_record(1, 0);
  r.path = "/photos/latin1-\xE9t\xE9.jpg";
  std::string line = format_jsonl(std::span(&r, 1));
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("path"), "/photos/latin1-\xEF\xBF\xBDt\xEF\xBF\xBD.jpg");
}

TEST(Exports, CsvParsesBackWithPythonsCsvModule) {
  if (!tandem::testing::have_system_python()) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir("exports");
  auto records = awkward_records();
  std::string csv = dir.file("tags.csv"), json = dir.file("rows.json");
  write_csv(csv, records);
  ASSERT_EQ(tandem::testing::run_python(dir, R"(
import csv, json, sys
with open(sys.argv[1], newline='', encoding='utf-8') as f:
    rows = list(csv.reader(f, strict=True))
with open(sys.argv[2], 'w', encoding='utf-8') as f:
    json.dump(rows, f)
)", csv + " " + json), 0);
  auto rows = nlohmann::json::parse(read_all(json));
  ASSERT_EQ(rows.size(), records.size() + 1);
  EXPECT_EQ(rows[0], nlohmann::json({"path", "model", "status", "error_kind", "error", "tags",
                                     "objects", "size", "width", "height", "decode_ms", "infer_ms",
                                     "mtime_ns", "content_hash", "taken_at", "make", "model", "latitude",
                                     "longitude"}));
  for (size_t i = 0; i < records.size(); ++i) {
    const FileRecord& r = records[i];
    const auto& row = rows[i + 1];
    ASSERT_EQ(row.size(), 19u);
    EXPECT_EQ(row[0], r.path);
    EXPECT_EQ(row[1], r.model_id);
    EXPECT_EQ(row[2], r.ok ? "ok" : "failed");
    EXPECT_EQ(row[3], r.error_kind);
    EXPECT_EQ(row[4], r.error);
    // tags: "label:score;label:score", scores exact floats.
    std::vector<TagScore> tags;
    std::string field = row[5], entry;
    std::istringstream entries(field);
    while (std::getline(entries, entry, ';')) {
      size_t colon = entry.rfind(':');
      ASSERT_NE(colon, std::string::npos) << field;
      tags.push_back({entry.substr(0, colon), parse_float(entry.substr(colon + 1))});
    }
    ASSERT_EQ(tags.size(), r.tags.size()) << field;
    for (size_t k = 0; k < tags.size(); ++k) {
      EXPECT_EQ(tags[k].label, r.tags[k].label);
      EXPECT_EQ(tags[k].score, r.tags[k].score);
    }
    // objects: "label:score:x1:y1:x2:y2;...", the label before the last five ':'.
    std::vector<DetectedObject> objects;
    std::istringstream object_entries(row[6].get<std::string>());
    while (std::getline(object_entries, entry, ';')) {
      std::vector<float> numbers;
      for (int n = 0; n < 5; ++n) {
        size_t colon = entry.rfind(':');
        ASSERT_NE(colon, std::string::npos) << row[6];
        numbers.insert(numbers.begin(), parse_float(entry.substr(colon + 1)));
        entry.resize(colon);
      }
      objects.push_back({entry, numbers[0], Box{numbers[1], numbers[2], numbers[3], numbers[4]}});
    }
    ASSERT_EQ(objects.size(), r.objects.size()) << row[6];
    for (size_t k = 0; k < objects.size(); ++k) {
      EXPECT_EQ(objects[k].label, r.objects[k].label);
      EXPECT_EQ(objects[k].score, r.objects[k].score);
      EXPECT_EQ(objects[k].box.x1, r.objects[k].box.x1);
      EXPECT_EQ(objects[k].box.y1, r.objects[k].box.y1);
      EXPECT_EQ(objects[k].box.x2, r.objects[k].box.x2);
      EXPECT_EQ(objects[k].box.y2, r.objects[k].box.y2);
    }
    EXPECT_EQ(row[7], std::to_string(r.size));
    EXPECT_EQ(row[14], r.meta.taken_at);
    EXPECT_EQ(row[15], r.meta.make);
    EXPECT_EQ(row[16], r.meta.model);
    EXPECT_EQ(row[17].get<std::string>().empty(), !r.meta.latitude);
    if (r.meta.latitude) {
      EXPECT_NEAR(std::stod(row[17].get<std::string>()), *r.meta.latitude, 1e-7);
      EXPECT_NEAR(std::stod(row[18].get<std::string>()), *r.meta.longitude, 1e-7);
    }
    EXPECT_EQ(row[8], std::to_string(r.width));
    EXPECT_EQ(row[9], std::to_string(r.height));
    EXPECT_NEAR(std::stod(row[10].get<std::string>()), r.decode_ms, 5e-4);
    EXPECT_EQ(row[12], std::to_string(r.mtime_ns));
    EXPECT_EQ(row[13], r.content_hash);
  }
}

TEST(Exports, RewriteReplacesTheWholeFile) {
  TempDir dir("exports");
  auto records = awkward_records();
  std::string path = dir.file("tags.csv");
  write_csv(path, records);
  write_csv(path, std::span(records).first(2));
  EXPECT_EQ(read_all(path), format_csv(std::span(records).first(2)));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);  // no temp file left behind
  EXPECT_THROW(write_jsonl(dir.file("no/such/folder/t.jsonl"), records), tandem::Error);
}
