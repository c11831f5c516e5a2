// CUDA TopK vs the CPU backend (itself checked against ONNX's node tests
// and std::partial_sort): values and indices identical, bit for bit, for
// every path of cuda/topk.cu (a slice sorted whole, radix select, a full
// segmented sort), the detector's rows of 128*128*80 scores (one, and a
// batch of 8), ties (the lower index first), NaN and signed zeros, the
// smallest k, inner axes, int32 / int64, and f16 / bf16 (the GPU graph
// lowered; its values are the CPU's f32 inputs rounded, so ties abound).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

constexpr int64_t kDetectorRow = 128 * 128 * 80;

struct TopKCase {
  Shape in;
  int64_t k, axis = -1, largest = 1;
  std::string str() const {
    return shape_str(in) + " k=" + std::to_string(k) + " axis=" + std::to_string(axis) +
           (largest ? " largest" : " smallest");
  }
};

Graph topk_graph(const TopKCase& c, DType t) {
  GraphBuilder b;
  ValueId x = b.input("x", c.in, t);
  Attributes a;
  a.set("axis", c.axis);
  a.set("largest", c.largest);
  a.set("sorted", int64_t(1));
  ValueId values =
      b.node("TopK", {x, b.constant("k", Tensor::from_vector<int64_t>({c.k}, {1}))}, a, 2);
  b.output(values);
  b.output(values + 1);  // the indices
  return b.g;
}

void expect_same_topk(const TopKCase& c, const Tensor& x, Precision p = Precision::fp32,
                      const std::string& what = "") {
  auto [cpu, gpu] = run_both(topk_graph(c, x.dtype()), {x}, p);
  ASSERT_EQ(gpu.size(), 2u);
  const std::string at = c.str() + " " + precision_name(p) + " " + what;
  expect_identical(gpu[1], cpu[1], "indices " + at);
  expect_identical(gpu[0], cpu[0], "values " + at);
}

// Distinct values: a shuffled 0..n-1, scaled (exact in f32).
Tensor distinct_f32(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::vector<int64_t> perm(size_t(t.numel()));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = float(perm[size_t(i)] - t.numel() / 2) / 1024.f;
  return t;
}

// Few distinct values, so most elements tie with others (a peak-suppressed
// heatmap is mostly zeros).
Tensor tied_f32(const Shape& s, uint32_t seed, int levels = 5) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, levels - 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(u(rng)) * 0.25f;
  return t;
}

TEST(CudaTopK, DetectorRowOfDistinctScores) {
  TANDEM_REQUIRE_GPU();
  TopKCase c{{1, kDetectorRow}, 100};
  expect_same_topk(c, distinct_f32(c.in, 1), Precision::fp32, "distinct");
  expect_same_topk(c, random_f32(c.in, 2, 0.f, 1.f), Precision::fp32, "uniform");
}

TEST(CudaTopK, DetectorBatchOfEightRows) {
  TANDEM_REQUIRE_GPU();
  TopKCase c{{8, kDetectorRow}, 100};
  expect_same_topk(c, distinct_f32(c.in, 3), Precision::fp32, "distinct");
  expect_same_topk(c, random_f32(c.in, 4, 0.f, 1.f), Precision::fp32, "uniform");
}

// The k-th value ties with many elements: the lowest indices among them.
TEST(CudaTopK, TiesGoToTheLowerIndex) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 10;
  for (TopKCase c : {TopKCase{{1, kDetectorRow}, 100}, TopKCase{{3, 5000}, 37},
                     TopKCase{{4, 300}, 50}, TopKCase{{2, 5000}, 3000},
                     TopKCase{{3, 5000}, 37, -1, 0}, TopKCase{{2, 5000}, 3000, -1, 0}}) {
    expect_same_topk(c, tied_f32(c.in, seed++), Precision::fp32, "5 levels");
    expect_same_topk(c, Tensor::zeros(DType::f32, c.in), Precision::fp32, "all zero");
  }
  // A heatmap after peak suppression: zeros but for a few hundred peaks, of
  // which some tie at the k-th.
  Tensor heat = Tensor::zeros(DType::f32, {2, kDetectorRow});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> at(0, heat.numel() - 1);
  for (int i = 0; i < 300; ++i) heat.data<float>()[at(rng)] = float(1 + i % 40) / 64.f;
  expect_same_topk({{2, kDetectorRow}, 100}, heat, Precision::fp32, "sparse peaks");
}

// Values equal, NaN to any NaN: a NaN's payload may change in the casts of
// a lowered graph.
void expect_same_values(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    float g = gpu.data<float>()[i], c = cpu.data<float>()[i];
    if (std::isnan(c))
      EXPECT_TRUE(std::isnan(g)) << what << " element " << i;
    else
      EXPECT_EQ(std::memcmp(&g, &c, sizeof g), 0)
          << what << " element " << i << ": " << g << " vs " << c;
  }
}

// NaN ranks above every number (last for the smallest), -0 ties +0, inf
// and the largest finite values keep their order; in f16 and bf16 too (the
// inputs rounded to them first, so the CPU sees what the GPU sees).
TEST(CudaTopK, NanInfinityAndSignedZeros) {
  TANDEM_REQUIRE_GPU();
  for (int64_t n : {int64_t(100), int64_t(20000)}) {
    Tensor x = random_f32({2, n}, 20, -1.f, 1.f);
    float* v = x.data<float>();
    const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                             -0.f,
                             0.f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::max(),
                             -0.f,
                             std::numeric_limits<float>::quiet_NaN()};
    for (int64_t i = 0; i < 2 * n; i += 7) v[i] = special[(i / 7) % 8];
    for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
      Tensor xp = p == Precision::fp32 ? x : to_f32(to_low(x, storage_dtype(p)));
      for (int64_t largest : {1, 0})
        for (int64_t k : {int64_t(1), int64_t(30), n}) {
          TopKCase c{{2, n}, k, -1, largest};
          auto [cpu, gpu] = run_both(topk_graph(c, DType::f32), {xp}, p);
          const std::string at = c.str() + " " + precision_name(p);
          expect_identical(gpu[1], cpu[1], "indices " + at);
          expect_same_values(gpu[0], cpu[0], "values " + at);
        }
    }
  }
}

// Every path, on distinct and tied values, along last and inner axes.
TEST(CudaTopK, ShapesAxesAndPaths) {
  TANDEM_REQUIRE_GPU();
  std::vector<TopKCase> cases = {
      {{5}, 5},
      {{1, 1}, 1},
      {{7, 1}, 1, 0},
      {{3, 2048}, 2048},
      {{3, 2049}, 1},
      {{3, 2049}, 2048},
      {{3, 2049}, 2049},
      {{4, 3000, 5}, 7, 1},
      {{3, 50, 4}, 10, 1},
      {{2, 5000}, 3000},
      {{6, 4}, 3, 0},
      {{1000, 9}, 4},
      {{2, 3, 70000}, 100},
      {{70000, 3}, 9, 0},
      {{2, 300, 3}, 300, 1},
  };
  uint32_t seed = 30;
  for (const TopKCase& c : cases)
    for (int64_t largest : {1, 0}) {
      TopKCase d = c;
      d.largest = largest;
      expect_same_topk(d, distinct_f32(d.in, seed++), Precision::fp32, "distinct");
      expect_same_topk(d, tied_f32(d.in, seed++), Precision::fp32, "tied");
    }
}

Tensor random_ints(DType t, const Shape& s, uint32_t seed, int64_t lo, int64_t hi) {
  Tensor r = Tensor::empty(t, s);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  for (int64_t i = 0; i < r.numel(); ++i) {
    if (t == DType::i64)
      r.data<int64_t>()[i] = u(rng);
    else
      r.data<int32_t>()[i] = int32_t(u(rng));
  }
  return r;
}

TEST(CudaTopK, IntegerInputs) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 50;
  const int64_t big = int64_t(1) << 40;
  for (DType t : {DType::i32, DType::i64})
    for (TopKCase c : {TopKCase{{3, 100}, 10}, TopKCase{{3, 9000}, 25}, TopKCase{{2, 4000}, 2500},
                       TopKCase{{4, 9000, 2}, 25, 1, 0}}) {
      int64_t wide = t == DType::i64 ? big : int64_t(1) << 30;
      expect_same_topk(c, random_ints(t, c.in, seed++, -wide, wide), Precision::fp32, "wide");
      expect_same_topk(c, random_ints(t, c.in, seed++, -3, 3), Precision::fp32, "ties");
    }
}

// Lowered to f16 / bf16: the values are the CPU's rounded inputs (ties
// between neighbours of the f32 draw), so indices and values are exact.
TEST(CudaTopK, HalfPrecisionRowsAreExact) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 70;
  for (Precision p : {Precision::fp16, Precision::bf16})
    for (TopKCase c : {TopKCase{{8, kDetectorRow}, 100}, TopKCase{{3, 500}, 20},
                       TopKCase{{2, 5000}, 3000}, TopKCase{{4, 3000, 5}, 7, 1, 0}})
      expect_same_topk(c, random_for(p, c.in, seed++, 0.f, 1.f), p);
}

// k = 0 and empty inputs give empty outputs on every path.
TEST(CudaTopK, NothingToSelect) {
  TANDEM_REQUIRE_GPU();
  for (TopKCase c : {TopKCase{{3, 5000}, 0}, TopKCase{{0, 5000}, 100}, TopKCase{{3, 0}, 0},
                     TopKCase{{2, 0, 6000}, 3000, 2}, TopKCase{{4, 100}, 0}})
    expect_same_topk(c, random_f32(c.in, 95), Precision::fp32, "empty");
}

// A plan records its kernels into a CUDA graph at its second run and
// replays it after: each path's kernels (scratch, CUB's sort) must replay
// on new inputs as they ran.
TEST(CudaTopK, RecordedPlansReplayOnNewInputs) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 90;
  for (TopKCase c : {TopKCase{{3, 500}, 20}, TopKCase{{4, 9000}, 100}, TopKCase{{2, 5000}, 3000}}) {
    Graph g = topk_graph(c, DType::f32);
    Session cpu(g), gpu(g, SessionOptions::on(Device::cuda(0)));
    for (int run = 0; run < 4; ++run) {
      Tensor x = run % 2 ? tied_f32(c.in, seed++) : distinct_f32(c.in, seed++);
      std::vector<Tensor> want = cpu.run({x}), got = gpu.run({x});
      const std::string at = c.str() + " run " + std::to_string(run);
      expect_identical(got[1], want[1], "indices " + at);
      expect_identical(got[0], want[0], "values " + at);
    }
  }
}

}  // namespace
}  // namespace tandem::testing
