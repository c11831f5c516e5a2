// TopK on every path a kernel may take (a slice sorted whole, radix select,
// a full segmented sort): the detector's rows of 128*128*80 scores, ties
// (the lower index first), NaN and signed zeros, the smallest k, inner
// axes, integers, empty inputs. Values and indices exactly as the CPU
// backend's (its own tests check it against ONNX's data and
// std::partial_sort).
#include <limits>
#include <random>

#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"
#include "tests/topk_inputs.h"

namespace tandem::backend_ops {

namespace {

constexpr int64_t kDetectorRow = 128 * 128 * 80;

struct TopK {
  Shape in;
  int64_t k, axis = -1, largest = 1;
};

OpCase topk_case(const TopK& t, const std::string& values, Tensor x) {
  return OpCase("TopK", shape_str(t.in) + "-k" + std::to_string(t.k) + "-axis" +
                            std::to_string(t.axis) + (t.largest ? "-largest-" : "-smallest-") +
                            values)
      .in(std::move(x))
      .constant_in(Tensor::from_vector<int64_t>({t.k}, {1}))
      .attr("axis", t.axis)
      .attr("largest", t.largest)
      .attr("sorted", int64_t(1))
      .outputs(2)
      .exactly();
}

Tensor shuffled(const Shape& s, uint64_t seed) { return testing::shuffled_values(s, seed); }
Tensor tied(const Shape& s, uint64_t seed) { return testing::tied_values(s, seed); }

Tensor integers(DType d, const Shape& s, uint64_t seed, int64_t lo, int64_t hi) {
  Tensor r = Tensor::empty(d, s);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  for (int64_t i = 0; i < r.numel(); ++i) {
    if (d == DType::i64)
      r.data<int64_t>()[i] = u(rng);
    else
      r.data<int32_t>()[i] = int32_t(u(rng));
  }
  return r;
}

// Uniform values in [-1, 1) with NaN, both zeros, both infinities and the
// largest float every 7th element.
Tensor with_specials(const Shape& s, uint64_t seed) {
  Tensor x = uniform(s, seed);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                           -0.f,
                           0.f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::max(),
                           -0.f,
                           std::numeric_limits<float>::quiet_NaN()};
  for (int64_t i = 0; i < x.numel(); i += 7) x.data<float>()[i] = special[(i / 7) % 8];
  return x;
}

void add_detector_cases(std::vector<OpCase>& cases, Seeds& seed) {
  for (TopK t : {TopK{{1, kDetectorRow}, 100}, TopK{{8, kDetectorRow}, 100}}) {
    cases.push_back(topk_case(t, "distinct", shuffled(t.in, seed())));
    cases.push_back(topk_case(t, "uniform", uniform(t.in, seed(), 0, 1)));
  }
  // The k-th value ties with many elements: the lowest indices among them.
  for (TopK t : {TopK{{1, kDetectorRow}, 100}, TopK{{3, 5000}, 37}, TopK{{4, 300}, 50},
                 TopK{{2, 5000}, 3000}, TopK{{3, 5000}, 37, -1, 0}, TopK{{2, 5000}, 3000, -1, 0}}) {
    cases.push_back(topk_case(t, "5-levels", tied(t.in, seed())));
    cases.push_back(topk_case(t, "all-zero", Tensor::zeros(DType::f32, t.in)));
  }
  // A heatmap after peak suppression: zeros but for a few hundred peaks,
  // some tying at the k-th.
  Tensor heat = Tensor::zeros(DType::f32, {2, kDetectorRow});
  std::mt19937_64 rng(seed());
  std::uniform_int_distribution<int64_t> at(0, heat.numel() - 1);
  for (int i = 0; i < 300; ++i) heat.data<float>()[at(rng)] = float(1 + i % 40) / 64.f;
  cases.push_back(topk_case({{2, kDetectorRow}, 100}, "sparse-peaks", heat));
}

}  // namespace

void add_topk_cases(std::vector<OpCase>& cases) {
  Seeds seed{4100};
  add_detector_cases(cases, seed);
  // NaN ranks above every number (last for the smallest), -0 ties +0.
  for (int64_t n : {int64_t(100), int64_t(20000)})
    for (int64_t largest : {1, 0})
      for (int64_t k : {int64_t(1), int64_t(30), n})
        cases.push_back(
            topk_case({{2, n}, k, -1, largest}, "nan-inf-zeros", with_specials({2, n}, seed())));
  for (TopK t :
       {TopK{{5}, 5}, TopK{{1, 1}, 1}, TopK{{7, 1}, 1, 0}, TopK{{3, 2048}, 2048},
        TopK{{3, 2049}, 1}, TopK{{3, 2049}, 2048}, TopK{{3, 2049}, 2049}, TopK{{4, 3000, 5}, 7, 1},
        TopK{{3, 50, 4}, 10, 1}, TopK{{2, 5000}, 3000}, TopK{{6, 4}, 3, 0}, TopK{{1000, 9}, 4},
        TopK{{2, 3, 70000}, 100}, TopK{{70000, 3}, 9, 0}, TopK{{2, 300, 3}, 300, 1}})
    for (int64_t largest : {1, 0}) {
      t.largest = largest;
      cases.push_back(topk_case(t, "distinct", shuffled(t.in, seed())));
      cases.push_back(topk_case(t, "tied", tied(t.in, seed())));
    }
  for (DType d : {DType::i32, DType::i64})
    for (TopK t : {TopK{{3, 100}, 10}, TopK{{3, 9000}, 25}, TopK{{2, 4000}, 2500},
                   TopK{{4, 9000, 2}, 25, 1, 0}}) {
      int64_t wide = d == DType::i64 ? int64_t(1) << 40 : int64_t(1) << 30;
      std::string name(dtype_name(d));
      cases.push_back(topk_case(t, name + "-wide", integers(d, t.in, seed(), -wide, wide)));
      cases.push_back(topk_case(t, name + "-ties", integers(d, t.in, seed(), -3, 3)));
    }
  // k = 0 and empty inputs: empty outputs.
  for (TopK t : {TopK{{3, 5000}, 0}, TopK{{0, 5000}, 100}, TopK{{3, 0}, 0},
                 TopK{{2, 0, 6000}, 3000, 2}, TopK{{4, 100}, 0}})
    cases.push_back(topk_case(t, "empty", uniform(t.in, seed())));
}

}  // namespace tandem::backend_ops
