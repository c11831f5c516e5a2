#include "pipeline/top_k.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tandem::pipeline {

std::vector<std::pair<int, float>> softmax_top_k(const float* logits, int classes, int k) {
  if (classes <= 0) return {};
  float mx = *std::max_element(logits, logits + classes);
  std::vector<double> p(static_cast<size_t>(classes));
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += p[size_t(c)] = std::exp(double(logits[c] - mx));
  std::vector<int> idx(static_cast<size_t>(classes));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::clamp(k, 0, classes);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    return p[size_t(a)] != p[size_t(b)] ? p[size_t(a)] > p[size_t(b)] : a < b;
  });
  std::vector<std::pair<int, float>> r;
  for (int i = 0; i < k; ++i) r.push_back({idx[size_t(i)], float(p[size_t(idx[size_t(i)])] / sum)});
  return r;
}

}  // namespace tandem::pipeline
