// The ops today's transformers and ConvNeXt add to a CNN, on cuda:0 vs the
// CPU backend (itself checked against the ONNX definition in float64,
// tests/test_layernorm.cpp): LayerNormalization with Mean and InvStdDev,
// short rows (ConvNeXt's 96 channels), ViT's 768 and rows longer than the
// kernel keeps in registers; and attention as exported by PyTorch, batched
// MatMul over heads with a scaled Softmax between. fp32 relative error <=
// 1e-5 of the reference norm; fp16/bf16 (the GPU graph lowered, the CPU in
// f32 on the same rounded inputs) <= 1e-2. Sessions are strict: a kernel
// that refused would fail the test instead of running on the CPU.
#include <cmath>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

struct LayerNormCase {
  Shape x;
  int64_t axis;
  Shape scale;
  bool bias;
  int outputs;
};

void expect_layernorm_matches(Precision p) {
  const LayerNormCase cases[] = {
      {{2, 56, 56, 96}, -1, {96}, true, 1},  {{2, 197, 768}, -1, {768}, true, 3},
      {{3, 5, 6}, 1, {5, 6}, false, 3},     {{4, 3000}, -1, {3000}, true, 2},
      {{2, 3, 4, 5}, -3, {3, 1, 5}, true, 1}, {{7, 33}, -1, {1}, true, 3},
  };
  uint32_t seed = 40;
  for (const LayerNormCase& c : cases) {
    GraphBuilder b;
    ValueId x = b.input("x", c.x);
    std::vector<ValueId> in = {x, b.constant("scale", random_for(p, c.scale, seed++, 0.5f, 1.5f))};
    if (c.bias) in.push_back(b.constant("bias", random_for(p, c.scale, seed++)));
    Attributes a;
    a.set("axis", c.axis);
    a.set("epsilon", 1e-5f);
    ValueId y = b.node("LayerNormalization", in, a, c.outputs);
    b.output(y);
    const Node& n = b.g.nodes.back();
    for (int k = 1; k < c.outputs; ++k) b.output(n.outputs[size_t(k)]);
    // Rows offset from 0: the variance must not come from E[x^2] - mean^2.
    auto [cpu, gpu] = run_both(b.g, {random_for(p, c.x, seed++, 3.f, 7.f)}, p, /*strict=*/true);
    for (size_t k = 0; k < cpu.size(); ++k)
      EXPECT_LE(relative_error(gpu[k], cpu[k]), tolerance(p))
          << "LayerNormalization x" << shape_str(c.x) << " axis " << c.axis << " output " << k << " "
          << precision_name(p);
  }
}

TEST(CudaLayerNorm, MatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_layernorm_matches(Precision::fp32);
}

TEST(CudaLayerNorm, HalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_layernorm_matches(Precision::fp16);
  expect_layernorm_matches(Precision::bf16);
}

// softmax(Q K^T / sqrt(d)) V over [batch, heads, tokens, head dim], the
// scale as PyTorch's export writes it (Mul of Q by a scalar; Div of the
// scores in older exports), K transposed by a Transpose node.
void expect_attention_matches(Precision p, bool divide) {
  const int64_t batch = 2, heads = 12, tokens = 197, dim = 64;
  GraphBuilder b;
  const Shape s{batch, heads, tokens, dim};
  ValueId q = b.input("q", s), k = b.input("k", s), v = b.input("v", s);
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
  Attributes last;
  last.set("axis", int64_t(-1));
  ValueId kt = b.node("Transpose", {k}, perm);
  ValueId scores;
  if (divide) {
    ValueId raw = b.node("MatMul", {q, kt});
    scores = b.node("Div", {raw, b.constant("d", Tensor::from_vector<float>({8.f}, {}))});
  } else {
    ValueId qs = b.node("Mul", {q, b.constant("r", Tensor::from_vector<float>({0.125f}, {}))});
    scores = b.node("MatMul", {qs, kt});
  }
  b.output(b.node("MatMul", {b.node("Softmax", {scores}, last), v}));
  auto [cpu, gpu] = run_both(
      b.g, {random_for(p, s, 71, -2.f, 2.f), random_for(p, s, 72, -2.f, 2.f), random_for(p, s, 73)}, p,
      /*strict=*/true);
  EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p))
      << "attention " << (divide ? "Div" : "Mul") << " " << precision_name(p);
}

TEST(CudaAttention, BatchedMatMulOverHeadsMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  for (bool divide : {false, true}) expect_attention_matches(Precision::fp32, divide);
}

TEST(CudaAttention, HalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16})
    for (bool divide : {false, true}) expect_attention_matches(p, divide);
}

}  // namespace
}  // namespace tandem::testing
