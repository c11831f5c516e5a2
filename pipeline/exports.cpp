#include "pipeline/exports.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/file_bytes.h"

namespace tandem::pipeline {

namespace {

// The float's shortest decimal form, as the double it reads as: JSON then
// prints 0.87, not 0.8700000047683716, and parsing it back gives the float.
double shortest(float score) {
  std::string text = fmt::format("{}", score);
  double value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// Timings to the microsecond: finer digits are noise.
double milliseconds(double ms) { return std::round(ms * 1000.0) / 1000.0; }

// The model's tags, then "person:NAME" for each named person in the photo
// (scored by their best face), as a photo manager's keyword list has them.
std::vector<TagScore> tags_with_people(const FileRecord& r) {
  std::vector<TagScore> out = r.tags;
  for (const FaceRecord& f : r.faces) {
    if (f.person_name.empty()) continue;
    const std::string label = "person:" + f.person_name;
    auto it = std::find_if(out.begin(), out.end(), [&](const TagScore& t) { return t.label == label; });
    if (it == out.end()) out.push_back({label, f.score});
    else it->score = std::max(it->score, f.score);
  }
  return out;
}

nlohmann::ordered_json faces_json(const FileRecord& r) {
  nlohmann::ordered_json faces = nlohmann::ordered_json::array();
  for (const FaceRecord& f : r.faces) {
    nlohmann::ordered_json j = {
        {"score", shortest(f.score)},
        {"box", {shortest(f.box.x1), shortest(f.box.y1), shortest(f.box.x2), shortest(f.box.y2)}},
        {"age", shortest(f.age)},
        {"gender_score", shortest(f.gender_score)}};
    j["person"] = f.person_id ? nlohmann::ordered_json(f.person_id) : nlohmann::ordered_json(nullptr);
    j["name"] = f.person_name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(f.person_name);
    faces.push_back(std::move(j));
  }
  return faces;
}

// What the camera wrote, every key present (null where it wrote nothing),
// so a reader sees one shape.
nlohmann::ordered_json meta_json(const image::PhotoMetadata& m) {
  auto text = [](const std::string& s) { return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s); };
  auto real = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {{"taken_at", text(m.taken_at)},
          {"taken_offset", text(m.taken_offset)},
          {"make", text(m.make)},
          {"model", text(m.model)},
          {"lens", text(m.lens)},
          {"exposure_s", real(m.exposure_s)},
          {"f_number", real(m.f_number)},
          {"iso", m.iso ? nlohmann::ordered_json(*m.iso) : nlohmann::ordered_json(nullptr)},
          {"focal_length_mm", real(m.focal_length_mm)},
          {"latitude", real(m.latitude)},
          {"longitude", real(m.longitude)},
          {"altitude_m", real(m.altitude_m)}};
}

nlohmann::ordered_json to_json(const FileRecord& r) {
  nlohmann::ordered_json tags = nlohmann::ordered_json::array();
  for (const TagScore& t : tags_with_people(r)) tags.push_back({{"label", t.label}, {"score", shortest(t.score)}});
  nlohmann::ordered_json objects = nlohmann::ordered_json::array();
  for (const DetectedObject& o : r.objects) {
    nlohmann::ordered_json box = {shortest(o.box.x1), shortest(o.box.y1), shortest(o.box.x2),
                                  shortest(o.box.y2)};
    objects.push_back({{"label", o.label}, {"score", shortest(o.score)}, {"box", std::move(box)}});
  }
  nlohmann::ordered_json j = {{"path", r.path}, {"model", r.model_id}, {"ok", r.ok}};
  if (!r.ok) {
    j["error_kind"] = r.error_kind;
    j["error"] = r.error;
  }
  j["tags"] = std::move(tags);
  j["objects"] = std::move(objects);
  j["faces"] = faces_json(r);
  j["meta"] = meta_json(r.meta);
  j["size"] = r.size;
  j["width"] = r.width;
  j["height"] = r.height;
  j["decode_ms"] = milliseconds(r.decode_ms);
  j["infer_ms"] = milliseconds(r.infer_ms);
  j["mtime_ns"] = r.mtime_ns;
  j["content_hash"] = r.content_hash;
  return j;
}

// RFC 4180: a field holding a comma, quote or line break is quoted, with
// its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string csv_tags(const std::vector<TagScore>& tags) {
  std::string out;
  for (const TagScore& t : tags) out += fmt::format("{}{}:{}", out.empty() ? "" : ";", t.label, t.score);
  return out;
}

std::string csv_objects(const std::vector<DetectedObject>& objects) {
  std::string out;
  for (const DetectedObject& o : objects)
    out += fmt::format("{}{}:{}:{}:{}:{}:{}", out.empty() ? "" : ";", o.label, o.score, o.box.x1,
                       o.box.y1, o.box.x2, o.box.y2);
  return out;
}

}  // namespace

std::string format_jsonl(std::span<const FileRecord> records) {
  std::string out;
  for (const FileRecord& r : records)
    out += to_json(r).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  return out;
}

std::string format_csv(std::span<const FileRecord> records) {
  std::string out =
      "path,model,status,error_kind,error,tags,objects,size,width,height,decode_ms,infer_ms,"
      "mtime_ns,content_hash,taken_at,make,model,latitude,longitude\r\n";
  auto coordinate = [](const std::optional<double>& v) { return v ? fmt::format("{:.7f}", *v) : std::string(); };
  for (const FileRecord& r : records) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{},{},{},{},{},{},{}\r\n", csv_field(r.path),
                       csv_field(r.model_id), r.ok ? "ok" : "failed", csv_field(r.error_kind),
                       csv_field(r.error), csv_field(csv_tags(tags_with_people(r))),
                       csv_field(csv_objects(r.objects)), r.size, r.width, r.height, r.decode_ms,
                       r.infer_ms, r.mtime_ns, csv_field(r.content_hash), csv_field(r.meta.taken_at),
                       csv_field(r.meta.make), csv_field(r.meta.model), coordinate(r.meta.latitude),
                       coordinate(r.meta.longitude));
  }
  return out;
}

void write_jsonl(const std::string& path, std::span<const FileRecord> records) {
  write_file_atomically(path, format_jsonl(records));
}

void write_csv(const std::string& path, std::span<const FileRecord> records) {
  write_file_atomically(path, format_csv(records));
}

}  // namespace tandem::pipeline
