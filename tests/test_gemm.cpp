// Gemm, tandem.FusedGemm and MatMul on the CPU backend vs naive float64 loops
// written here (ONNX formulas: Y = alpha*A'B' + beta*C; numpy.matmul). Covers
// the inner-product path (constant B, bias-like C) and the matmul path
// (computed operands, transA, full C), every transpose combination, C
// broadcast shapes, batched MatMul with broadcasting and 1-D operands.
// Tolerance: 1e-4 * max|ref| (inputs in [-1, 1]).
#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "tests/cpu_features.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {


void expect_close(const Tensor& got, const Tensor& ref, const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  EXPECT_LE(max_abs_diff(got, ref), 1e-4 * std::max(max_abs(ref), 1e-6)) << what;
}

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  float alpha, beta;
  Shape c;          // {-1} = no C
  bool b_const, c_const;
};

Tensor reference_gemm(const Tensor& a, const Tensor& b, const Tensor* c, const GemmCase& g) {
  Tensor y = Tensor::empty(DType::f32, {g.m, g.n});
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < g.k; ++p)
        acc += double(ap[g.ta ? p * g.m + i : i * g.k + p]) * bp[g.tb ? j * g.k + p : p * g.n + j];
      double cv = 0;
      if (c) {
        // C broadcast to [M, N] from the right.
        Shape cs = c->shape();
        while (cs.size() < 2) cs.insert(cs.begin(), 1);
        cv = c->scalar_at((cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j));
      }
      y.data<float>()[i * g.n + j] = float(g.alpha * acc + g.beta * cv);
    }
  return y;
}

std::string describe(const GemmCase& g) {
  return "m" + std::to_string(g.m) + " k" + std::to_string(g.k) + " n" + std::to_string(g.n) + " tA" +
         std::to_string(g.ta) + " tB" + std::to_string(g.tb) + " alpha " + std::to_string(g.alpha) + " beta " +
         std::to_string(g.beta) + " C" + shape_str(g.c) + " Bconst " + std::to_string(g.b_const) + " Cconst " +
         std::to_string(g.c_const);
}

}  // namespace

TEST(CpuGemm, MatchesNaiveLoop) {
  std::vector<GemmCase> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bc : {false, true}) {
        cases.push_back({5, 17, 9, ta, tb, 1.f, 1.f, {9}, bc, true});
        cases.push_back({4, 33, 20, ta, tb, 0.5f, 2.f, {4, 20}, bc, false});
        cases.push_back({3, 8, 6, ta, tb, 1.5f, 1.f, {-1}, bc, false});
      }
  cases.push_back({1, 2048, 1000, false, true, 1.f, 1.f, {1000}, true, true});   // ResNet FC
  cases.push_back({2, 64, 10, false, false, 2.f, 0.5f, {1, 10}, true, true});    // FC, alpha/beta folded
  cases.push_back({3, 16, 7, false, true, 1.f, 3.f, {}, true, true});            // scalar C
  cases.push_back({6, 16, 7, false, true, 1.f, 1.f, {6, 1}, true, true});        // column C
  cases.push_back({6, 16, 7, false, true, 1.f, -2.f, {7}, true, false});         // computed C, beta trick
  cases.push_back({6, 16, 7, true, false, 1.f, 0.f, {6, 7}, false, false});      // beta 0 ignores C
  uint64_t seed = 300;
  for (const GemmCase& g : cases) {
    seed += 5;
    Tensor a = random_tensor(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, seed);
    Tensor b = random_tensor(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, seed + 1);
    bool has_c = !(g.c.size() == 1 && g.c[0] == -1);
    Tensor c = has_c ? random_tensor(g.c, seed + 2) : Tensor();
    Attributes attrs;
    attrs.set("transA", int64_t(g.ta));
    attrs.set("transB", int64_t(g.tb));
    attrs.set("alpha", g.alpha);
    attrs.set("beta", g.beta);
    OpCall call = make_call("Gemm", attrs, {a, b}, {false, g.b_const, g.c_const});
    if (has_c) call.inputs.push_back(c);
    expect_close(run_op_cpu(call)[0], reference_gemm(a, b, has_c ? &c : nullptr, g), describe(g));
  }
}

TEST(CpuGemm, FusedGemmAppliesActivationAfterBias) {
  GemmCase g{4, 24, 12, false, true, 1.f, 1.f, {12}, true, true};
  Tensor a = random_tensor({4, 24}, 1, -2.f, 2.f), b = random_tensor({12, 24}, 2), c = random_tensor({12}, 3);
  for (bool b_const : {true, false}) {
    for (const char* act : {"Relu", "HardSigmoid", "Tanh"}) {
      Tensor ref = reference_gemm(a, b, &c, g);
      for (int64_t i = 0; i < ref.numel(); ++i) {
        double v = ref.scalar_at(i);
        if (std::string(act) == "Relu") v = std::max(v, 0.0);
        if (std::string(act) == "HardSigmoid") v = std::clamp(0.2 * v + 0.5, 0.0, 1.0);
        if (std::string(act) == "Tanh") v = std::tanh(v);
        ref.data<float>()[i] = float(v);
      }
      Attributes attrs;
      attrs.set("transB", int64_t(1));
      attrs.set("activation", std::string(act));
      OpCall call = make_call("tandem.FusedGemm", attrs, {a, b, c}, {false, b_const, true});
      expect_close(run_op_cpu(call)[0], ref, std::string(act) + (b_const ? " const B" : " computed B"));
    }
  }
}

namespace {

// numpy.matmul over float64.
Tensor reference_matmul(const Tensor& a, const Tensor& b, const Shape& y_shape) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  size_t r = std::max(as.size(), bs.size());
  while (as.size() < r) as.insert(as.begin(), 1);
  while (bs.size() < r) bs.insert(bs.begin(), 1);
  int64_t m = as[r - 2], k = as[r - 1], n = bs[r - 1];
  Shape batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(as[i], bs[i]);
  int64_t nb = shape_numel(batch);
  Tensor y = Tensor::empty(DType::f32, y_shape);
  for (int64_t bi = 0; bi < nb; ++bi) {
    // Batch offsets with broadcasting (extent 1 repeats).
    int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t d = r - 2; d-- > 0;) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += (as[d] == 1 ? 0 : idx) * sa;
      ob += (bs[d] == 1 ? 0 : idx) * sb;
      sa *= as[d];
      sb *= bs[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.scalar_at(oa * m * k + i * k + p) * b.scalar_at(ob * k * n + p * n + j);
        y.data<float>()[(bi * m + i) * n + j] = float(acc);
      }
  }
  return y;
}

}  // namespace

TEST(CpuGemm, MatMulMatchesNumpySemantics) {
  struct Case { Shape a, b, y; };
  std::vector<Case> cases = {
      {{5, 7}, {7, 3}, {5, 3}},
      {{7}, {7, 3}, {3}},
      {{5, 7}, {7}, {5}},
      {{7}, {7}, {}},
      {{2, 3, 5, 7}, {7, 4}, {2, 3, 5, 4}},      // 2-D B: batch folds into M
      {{3, 5, 7}, {3, 7, 4}, {3, 5, 4}},
      {{2, 1, 5, 7}, {3, 7, 4}, {2, 3, 5, 4}},   // both broadcast
      {{1, 5, 7}, {4, 7, 2}, {4, 5, 2}},         // A broadcast over B's batch
      {{4, 5, 7}, {1, 7, 2}, {4, 5, 2}},
      {{6}, {2, 6, 3}, {2, 3}},
  };
  uint64_t seed = 700;
  for (const Case& c : cases)
    for (bool b_const : {false, true}) {
      seed += 3;
      Tensor a = random_tensor(c.a, seed), b = random_tensor(c.b, seed + 1);
      Tensor y = run_op_cpu(make_call("MatMul", {}, {a, b}, {false, b_const}))[0];
      expect_close(y, reference_matmul(a, b, c.y),
                   "MatMul " + shape_str(c.a) + " x " + shape_str(c.b) + (b_const ? " const B" : ""));
    }
}

TEST(CpuGemm, RejectsMismatchedInnerExtents) {
  Tensor a = random_tensor({3, 4}, 1), b = random_tensor({5, 6}, 2);
  EXPECT_THROW(run_op_cpu(make_call("Gemm", {}, {a, b}, {})), Error);
  EXPECT_THROW(run_op_cpu(make_call("MatMul", {}, {a, b}, {})), Error);
  EXPECT_THROW(run_op_cpu(make_call("MatMul", {}, {random_tensor({2, 3, 4}, 3), random_tensor({3, 4, 5}, 4)}, {})),
               Error);
}

namespace {
Tensor round_bf16(const Tensor& f, DType to) {
  Tensor t = Tensor::empty(to, f.shape());
  auto* p = static_cast<uint16_t*>(t.raw());
  for (int64_t i = 0; i < f.numel(); ++i) {
    float v = float(f.scalar_at(i));
    if (to == DType::bf16) p[i] = float_to_bf16(v);
    else t.data<float>()[i] = bf16_to_float(float_to_bf16(v));
  }
  return t;
}
}  // namespace

// bf16 operands (inner-product and matmul paths): reference on the rounded
// values in float64; Y is rounded to bf16: 1e-2 * max|ref|.
TEST(CpuGemm, Bf16MatchesNaiveLoopOnRoundedInputs) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  for (bool b_const : {true, false}) {
    GemmCase g{3, 40, 24, false, true, 1.f, 1.f, {24}, b_const, true};
    Tensor a = random_tensor({3, 40}, 1), b = random_tensor({24, 40}, 2), c = random_tensor({24}, 3);
    Tensor ar = round_bf16(a, DType::f32), br = round_bf16(b, DType::f32), cr = round_bf16(c, DType::f32);
    Tensor ref = reference_gemm(ar, br, &cr, g);
    Attributes attrs;
    attrs.set("transB", int64_t(1));
    OpCall call = make_call("Gemm", attrs, {round_bf16(a, DType::bf16), round_bf16(b, DType::bf16), round_bf16(c, DType::bf16)},
                            {false, b_const, true});
    Tensor y = run_op_cpu(call)[0];
    ASSERT_EQ(y.dtype(), DType::bf16);
    Tensor yf = round_bf16(y, DType::f32);
    EXPECT_LE(max_abs_diff(yf, ref), 1e-2 * max_abs(ref)) << (b_const ? "constant B" : "computed B");
  }
}
