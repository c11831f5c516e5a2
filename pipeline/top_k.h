#pragma once
// A classifier's answer from its logits: softmax (in double, max-shifted),
// then the k most probable classes, best first (ties: lower index first).
#include <utility>
#include <vector>

namespace tandem::pipeline {

std::vector<std::pair<int, float>> softmax_top_k(const float* logits, int classes, int k);

}  // namespace tandem::pipeline
