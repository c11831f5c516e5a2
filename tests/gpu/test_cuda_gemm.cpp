// CUDA Gemm, tandem.FusedGemm and MatMul (cuBLASLt, fp32 compute without
// TF32) vs the CPU backend: relative error <= 1e-5 of the reference norm;
// with the GPU graph lowered to fp16 or bf16 (f32 accumulation, the CPU in
// f32 on the same rounded values), <= 1e-2.
#include <optional>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

constexpr double kFp32 = 1e-5;

Attributes gemm_attrs(int64_t trans_a, int64_t trans_b, float alpha = 1.f, float beta = 1.f) {
  Attributes a;
  a.set("transA", trans_a);
  a.set("transB", trans_b);
  a.set("alpha", alpha);
  a.set("beta", beta);
  return a;
}

// ResNet-50's classifier: Flatten, then Gemm with constant [1000, 2048]
// weights (transB) and a constant [1000] bias.
TEST(CudaGemm, ResNetHeadWithBias) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 2048, 1, 1});
  ValueId w = b.constant("w", random_f32({1000, 2048}, 2, -0.05f, 0.05f));
  ValueId bias = b.constant("bias", random_f32({1000}, 3));
  ValueId flat = b.node("Flatten", {x});
  b.output(b.node("Gemm", {flat, w, bias}, gemm_attrs(0, 1)));
  auto [cpu, gpu] = run_both(b.g, {random_f32({1, 2048, 1, 1}, 1, 0.f, 4.f)});
  EXPECT_LE(relative_error(gpu[0], cpu[0]), kFp32);
}

// Every way C can arrive: constant bias row (cuBLASLt bias epilogue), full
// [M,N] (cuBLASLt's C), [M,1] and scalar (our epilogue), none; transposes,
// alpha and beta; computed and constant B.
void expect_every_c_shape_matches(Precision p) {
  const int64_t m = 13, k = 70, n = 37;
  struct Case {
    std::optional<Shape> c;
    bool c_const, b_const;
    int64_t ta, tb;
    float alpha, beta;
  };
  std::vector<Case> cases = {{Shape{n}, true, true, 0, 0, 1.f, 1.f},      {Shape{1, n}, true, false, 1, 0, 0.5f, 2.f},
                             {Shape{m, n}, false, true, 0, 1, 1.5f, -1.f}, {Shape{m, n}, true, false, 1, 1, 1.f, 0.5f},
                             {Shape{m, 1}, false, false, 0, 0, 1.f, 3.f},  {Shape{}, true, true, 0, 1, 2.f, 1.f},
                             {Shape{n}, false, true, 1, 0, 1.f, 1.f},      {std::nullopt, false, true, 0, 0, 0.25f, 1.f}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    GraphBuilder b;
    Shape as = c.ta ? Shape{k, m} : Shape{m, k}, bs = c.tb ? Shape{n, k} : Shape{k, n};
    std::vector<Tensor> in = {random_for(p, as, seed++)};
    ValueId a = b.input("a", as);
    ValueId bv;
    if (c.b_const) {
      bv = b.constant("b", random_for(p, bs, seed++));
    } else {
      bv = b.input("b", bs);
      in.push_back(random_for(p, bs, seed++));
    }
    std::vector<ValueId> ins = {a, bv};
    if (c.c) {
      if (c.c_const) {
        ins.push_back(b.constant("c", random_for(p, *c.c, seed++)));
      } else {
        ins.push_back(b.input("c", *c.c));
        in.push_back(random_for(p, *c.c, seed++));
      }
    }
    b.output(b.node("Gemm", ins, gemm_attrs(c.ta, c.tb, c.alpha, c.beta)));
    auto [cpu, gpu] = run_both(b.g, in, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
        << "C " << (c.c ? shape_str(*c.c) : "none") << " transA " << c.ta << " transB " << c.tb << " alpha "
        << c.alpha << " beta " << c.beta << " " << precision_name(p);
  }
}

TEST(CudaGemm, EveryCShapeTransposeAndScale) {
  TANDEM_REQUIRE_GPU();
  expect_every_c_shape_matches(Precision::fp32);
}

// Relu rides cuBLASLt's RELU_BIAS epilogue; the others run in ours.
void expect_fused_gemm_activations_match(Precision p) {
  for (const char* act : {"Relu", "HardSigmoid", "Tanh", "SiLU", "LeakyRelu"}) {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 256});
    ValueId w = b.constant("w", random_for(p, {100, 256}, 21, -0.2f, 0.2f));
    ValueId bias = b.constant("bias", random_for(p, {100}, 22));
    Attributes attrs = gemm_attrs(0, 1);
    attrs.set("activation", std::string(act));
    b.output(b.node("tandem.FusedGemm", {x, w, bias}, attrs));
    auto [cpu, gpu] = run_both(b.g, {random_for(p, {8, 256}, 20)}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << act << " " << precision_name(p);
  }
}

TEST(CudaGemm, FusedGemmActivations) {
  TANDEM_REQUIRE_GPU();
  expect_fused_gemm_activations_match(Precision::fp32);
}

TEST(CudaGemm, MatMul2D) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId a = b.input("a", {64, 96});
  ValueId bb = b.input("b", {96, 128});
  b.output(b.node("MatMul", {a, bb}));
  auto [cpu, gpu] = run_both(b.g, {random_f32({64, 96}, 31), random_f32({96, 128}, 32)});
  EXPECT_LE(relative_error(gpu[0], cpu[0]), kFp32);
}

// Batched (strided, one operand repeated) and A's batch folded into M.
void expect_matmuls_match(Precision p) {
  struct Case {
    Shape a, b;
    bool b_const;
  };
  std::vector<Case> cases = {{{4, 64, 96}, {4, 96, 128}, false}, {{4, 33, 20}, {1, 20, 17}, false},
                             {{1, 33, 20}, {5, 20, 17}, true},   {{3, 5, 64, 96}, {96, 128}, true},
                             {{2, 3, 8, 16}, {2, 3, 16, 8}, false}, {{96}, {96, 128}, false},
                             {{64, 96}, {96}, false}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    GraphBuilder b;
    std::vector<Tensor> in = {random_for(p, c.a, seed++)};
    ValueId a = b.input("a", c.a);
    ValueId bv;
    if (c.b_const) {
      bv = b.constant("b", random_for(p, c.b, seed++));
    } else {
      bv = b.input("b", c.b);
      in.push_back(random_for(p, c.b, seed++));
    }
    b.output(b.node("MatMul", {a, bv}));
    auto [cpu, gpu] = run_both(b.g, in, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
        << shape_str(c.a) << " x " << shape_str(c.b) << " " << precision_name(p);
  }
}

TEST(CudaGemm, MatMulBatchedAndFolded) {
  TANDEM_REQUIRE_GPU();
  expect_matmuls_match(Precision::fp32);
}

// cuBLASLt on f16 and bf16 operands: every C path, the epilogues, batching.
TEST(CudaGemm, HalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    expect_every_c_shape_matches(p);
    expect_fused_gemm_activations_match(p);
    expect_matmuls_match(p);
  }
}

}  // namespace
}  // namespace tandem::testing
