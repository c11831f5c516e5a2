#pragma once
// Synthetic catalog records for the catalog and export tests: deterministic
// (a function of the index and a version), with failures, files without
// tags or objects, and awkward paths among them. And the stock sqlite3 tool, to read a
// catalog as any other program would.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/people.h"
#include "temp_dir.h"

namespace tandem::testing {

inline const std::vector<std::string> kSomeLabels = {"person", "dog",    "bicycle", "traffic light",
                                                     "café",   "cat",    "giraffe", "tie"};

// Record `i` of a collection; `version` changes size, mtime and tags as if
// the file had been edited between runs.
inline pipeline::FileRecord synthetic_record(int i, int version, const std::string& model = "centernet") {
  pipeline::FileRecord r;
  r.path = fmt::format("/photos/{}/IMG_{:04d}{}.jpg", i % 7 == 3 ? "Ürlaub, 2023" : "roll" + std::to_string(i % 5),
                       i, i % 13 == 4 ? " \"copy\"" : "");
  r.model_id = model;
  r.size = 100000 + 37 * i + version;
  r.mtime_ns = 1700000000000000000 + int64_t(i) * 1000000007 + version * 1000;
  r.content_hash = fmt::format("{:016x}", uint64_t(i) * 0x9E3779B97F4A7C15ull + uint64_t(version));
  r.ok = i % 11 != 5;
  if (!r.ok) {
    r.error_kind = "decode";
    r.error = fmt::format("JPEG: premature end of data (byte {})", 1000 + i);
    return r;
  }
  r.width = 640 + i % 3;
  r.height = 480 - version;
  int ntags = (i + version) % 6;
  for (int k = 0; k < ntags; ++k)
    r.tags.push_back({kSomeLabels[size_t(i + k + version) % kSomeLabels.size()],
                      0.9f / float(k + 1) - 0.001f * float(i % 17)});
  // Boxes inside the image, with fractions a float holds exactly and not.
  int nobjects = (i + 2 * version) % 4;
  for (int k = 0; k < nobjects; ++k) {
    float x1 = 10.5f * float(k) + float(i % 7), y1 = 20.25f + float(k) / 3.f;
    r.objects.push_back({kSomeLabels[size_t(3 * i + k + version) % kSomeLabels.size()],
                         0.95f / float(k + 1) - 0.002f * float(i % 13),
                         pipeline::Box{x1, y1, x1 + 100.f + float(i % 50) / 7.f,
                                       float(r.height) - float(version)}});
  }
  r.decode_ms = 3.25 + i % 4;
  r.infer_ms = 11.5 + version;
  return r;
}

inline std::vector<pipeline::FileRecord> synthetic_records(int n, int version) {
  std::vector<pipeline::FileRecord> out;
  for (int i = 0; i < n; ++i) out.push_back(synthetic_record(i, version));
  return out;
}

// Everything a record says except its timings, as one comparable line.
inline std::string content_of(const pipeline::FileRecord& r) {
  std::string s = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}x{}|", r.path, r.model_id, r.size, r.mtime_ns,
                              r.content_hash, r.ok, r.error_kind, r.error, r.width, r.height);
  for (const auto& t : r.tags) s += fmt::format("{}={:a};", t.label, t.score);
  s += "|";
  for (const auto& o : r.objects)
    s += fmt::format("{}={:a}@{:a},{:a},{:a},{:a};", o.label, o.score, o.box.x1, o.box.y1, o.box.x2,
                     o.box.y2);
  return s;
}

inline std::vector<std::string> contents_of(const std::vector<pipeline::FileRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(content_of(r));
  return out;
}

// In the catalog's order (bytewise by path).
inline std::vector<pipeline::FileRecord> sorted_by_path(std::vector<pipeline::FileRecord> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return v;
}

// f() throws an Error whose message holds every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown";
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// The sqlite3 tool's output for `sql` on the database at `path`.
inline std::string sqlite3_cli(const std::string& path, const std::string& sql) {
  int status = 0;
  std::string out = capture_command("sqlite3 " + shell_quote(path) + " " + shell_quote(sql), &status);
  EXPECT_EQ(status, 0) << sql;
  return out;
}

// Faces for the catalog's people tests. A person is a random direction in
// 1024 dimensions (random directions are nearly orthogonal: cosine
// distance about 1), each face of them that direction plus noise (cosine
// distance about 0.05 from it).
inline std::vector<float> direction(int person) {
  std::mt19937 rng(1000 + person);
  std::normal_distribution<float> n;
  std::vector<float> v(1024);
  for (float& x : v) x = n(rng);
  return v;
}

// A face of `person`: its direction scaled to a descriptor's length plus noise.
inline pipeline::FaceRecord face_of(int person, int variant, float x) {
  std::vector<float> d = pipeline::unit_descriptor(direction(person));
  std::mt19937 rng(77 * person + variant);
  std::normal_distribution<float> n(0.f, 0.3f / 32.f);  // |noise| ~ 0.3 of |d| = 1
  for (float& v : d) v = v + n(rng);
  pipeline::FaceRecord f;
  f.score = 0.9f;
  f.box = {x, 100, x + 200, 300};
  for (size_t k = 0; k < f.landmarks.size(); ++k) f.landmarks[k] = {x + 20.f * float(k), 150.5f};
  f.descriptor = std::move(d);
  for (float& v : f.descriptor) v *= 11.f;  // FaceRes's descriptors are about 11 long
  f.age = 30 + float(person);
  f.gender_score = 0.25f;
  return f;
}

inline pipeline::FileRecord photo(int i, std::vector<pipeline::FaceRecord> faces) {
  pipeline::FileRecord r = synthetic_record(i, 1);
  r.ok = true;
  r.error_kind.clear(), r.error.clear();
  r.width = 640, r.height = 480;
  r.path = fmt::format("/photos/faces/{:03d}.jpg", i);
  r.faces = std::move(faces);
  return r;
}

}  // namespace tandem::testing
