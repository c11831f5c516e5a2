#pragma once
// People as the faces that belong together. A person is the centroid of its
// faces' unit descriptors (kept as their sum and count); a new face joins
// the person whose centroid is nearest in cosine distance, within a
// threshold, or starts a person of its own. Incremental by construction: a
// new photo's faces never move anyone else's. The threshold and the choice
// of centroids over nearest faces or average linkage are measured in
// bench/face_clusters.py (docs/BENCHMARKS.md, "Faces").
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tandem::pipeline {

// The descriptor scaled to length 1 (a zero vector stays zero).
std::vector<float> unit_descriptor(std::span<const float> descriptor);

// 1 - cos of two unit vectors (0: the same direction, 2: opposite).
float cosine_distance(std::span<const float> a, std::span<const float> b);

class PeopleIndex {
 public:
  // One person's faces lie within 0.253 of each other's descriptors,
  // different people 0.324 or more apart (face-api's demo people under
  // flips, crops, rescales, re-encodes and exposure changes); 0.29 sits
  // in that gap.
  static constexpr float kJoinDistance = 0.29f;

  explicit PeopleIndex(float join_distance = kJoinDistance) : join_(join_distance) {}

  void set(int64_t person, std::vector<float> sum, int64_t faces);
  void erase(int64_t person);
  void clear() { people_.clear(); }
  bool contains(int64_t person) const { return people_.count(person) > 0; }

  // The person whose centroid is nearest `unit`, if within the join
  // distance (ties: the smaller id); 0 when none is.
  int64_t nearest(std::span<const float> unit, float* distance = nullptr) const;

  // A face (its unit descriptor) joins or leaves a person.
  void add(int64_t person, std::span<const float> unit);
  void remove(int64_t person, std::span<const float> unit);

  // The person's descriptor sum and face count (empty, 0 when unknown).
  std::span<const float> sum(int64_t person) const;
  int64_t faces(int64_t person) const;

 private:
  struct Person {
    std::vector<float> sum;
    int64_t faces = 0;
  };
  std::unordered_map<int64_t, Person> people_;
  float join_;
};

}  // namespace tandem::pipeline
