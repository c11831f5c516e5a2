#include "pipeline/people.h"

#include <cmath>

namespace tandem::pipeline {

std::vector<float> unit_descriptor(std::span<const float> d) {
  double sq = 0;
  for (float v : d) sq += double(v) * double(v);
  std::vector<float> out(d.begin(), d.end());
  if (sq > 0) {
    const double inv = 1.0 / std::sqrt(sq);
    for (float& v : out) v = float(double(v) * inv);
  }
  return out;
}

float cosine_distance(std::span<const float> a, std::span<const float> b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    dot += double(a[i]) * double(b[i]);
    na += double(a[i]) * double(a[i]);
    nb += double(b[i]) * double(b[i]);
  }
  if (na <= 0 || nb <= 0 || a.size() != b.size()) return 2.f;
  return float(1.0 - dot / std::sqrt(na * nb));
}

void PeopleIndex::set(int64_t person, std::vector<float> sum, int64_t faces) {
  people_[person] = Person{std::move(sum), faces};
}

void PeopleIndex::erase(int64_t person) { people_.erase(person); }

int64_t PeopleIndex::nearest(std::span<const float> unit, float* distance) const {
  int64_t best = 0;
  float best_d = join_;
  for (const auto& [id, p] : people_) {
    if (p.faces <= 0) continue;
    // The sum points where the centroid does: its length does not matter.
    const float d = cosine_distance(unit, p.sum);
    if (d < best_d || (d == best_d && best != 0 && id < best)) best = id, best_d = d;
  }
  if (distance) *distance = best ? best_d : 2.f;
  return best;
}

void PeopleIndex::add(int64_t person, std::span<const float> unit) {
  Person& p = people_[person];
  if (p.sum.size() != unit.size()) p.sum.assign(unit.size(), 0.f);
  for (size_t i = 0; i < unit.size(); ++i) p.sum[i] += unit[i];
  ++p.faces;
}

void PeopleIndex::remove(int64_t person, std::span<const float> unit) {
  auto it = people_.find(person);
  if (it == people_.end()) return;
  Person& p = it->second;
  for (size_t i = 0; i < unit.size() && i < p.sum.size(); ++i) p.sum[i] -= unit[i];
  if (--p.faces <= 0) p.sum.assign(p.sum.size(), 0.f), p.faces = 0;
}

std::span<const float> PeopleIndex::sum(int64_t person) const {
  auto it = people_.find(person);
  return it == people_.end() ? std::span<const float>() : std::span<const float>(it->second.sum);
}

int64_t PeopleIndex::faces(int64_t person) const {
  auto it = people_.find(person);
  return it == people_.end() ? 0 : it->second.faces;
}

}  // namespace tandem::pipeline
