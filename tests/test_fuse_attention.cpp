// fuse_attention (graph/passes.h): the attention chains PyTorch exports for
// nn.MultiheadAttention, heads split by Slice/Reshape/Transpose (PyTorch 1)
// or gathered from one copy of the projection (PyTorch 2), become one tandem.Attention reading its
// operands in place; chains whose scores are read elsewhere or normalized over another axis stay;
// Swin's shifted-window form, biases added through a reshape of the scores and an inference
// Dropout, fuses too. The fused graph runs on the CPU kernel and is compared with softmax(Q K^T /
// sqrt(d) + bias) V in float64 (1e-5 x max|ref|).
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/session.h"
#include "ops/attention.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr int64_t kSeq = 7, kBatch = 2, kHeads = 2, kDim = 8, kEmbed = kHeads * kDim;

enum class Form { slices, gathers, scores_also_output, softmax_other_axis };

ValueId ints(GraphBuilder& b, const std::string& name, std::vector<int64_t> v) {
  Shape s{int64_t(v.size())};
  return b.constant(name, Tensor::from_vector<int64_t>(v, s));
}

Attributes perm(std::vector<int64_t> p) {
  Attributes a;
  a.set("perm", p);
  return a;
}

ValueId scalar(GraphBuilder& b, const std::string& name, float v) {
  return b.constant(name, Tensor::from_vector<float>({v}, {}));
}

// x: [seq, batch, 3 * embed], q | k | v along the last axis (MHA's in_proj
// output); y: [seq, batch, embed]. As PyTorch 1's multi_head_attention_forward
// writes it: heads split by Slice, Reshape and Transpose, q divided by
// sqrt(dim).
Graph slices_graph(Form f) {
  GraphBuilder b;
  ValueId x = b.input("x", {kSeq, kBatch, 3 * kEmbed});
  auto head_split = [&](int part, std::vector<int64_t> p) {
    ValueId s = b.node("Slice", {x, ints(b, "s" + std::to_string(part), {part * kEmbed}),
                                 ints(b, "e" + std::to_string(part), {(part + 1) * kEmbed}),
                                 ints(b, "a" + std::to_string(part), {2})});
    ValueId r =
        b.node("Reshape", {s, ints(b, "r" + std::to_string(part), {kSeq, kBatch * kHeads, kDim})});
    return b.node("Transpose", {r}, perm(p));
  };
  ValueId q =
      b.node("Div", {head_split(0, {1, 0, 2}), scalar(b, "sqrt_d", std::sqrt(float(kDim)))});
  ValueId kt = head_split(1, {1, 2, 0});
  ValueId v = head_split(2, {1, 0, 2});
  ValueId s = b.node("MatMul", {q, kt});
  Attributes axis;
  axis.set("axis", int64_t(f == Form::softmax_other_axis ? 1 : -1));
  ValueId o = b.node("MatMul", {b.node("Softmax", {s}, axis), v});
  ValueId y = b.node(
      "Reshape", {b.node("Transpose", {o}, perm({1, 0, 2})), ints(b, "y", {kSeq, kBatch, kEmbed})});
  b.output(y);
  if (f == Form::scores_also_output) b.output(s);
  return b.g;
}

// The same x and y, as PyTorch 2's multi_head_attention_forward writes it:
// one copy makes q, k and v contiguous ([3, seq, batch, embed]), each is
// gathered from it, split into [batch, heads, seq, dim] and scaled by the
// square root of the scale on each side (scaled_dot_product_attention).
Graph gathers_graph() {
  GraphBuilder b;
  ValueId x = b.input("x", {kSeq, kBatch, 3 * kEmbed});
  ValueId x5 =
      b.node("Unsqueeze",
             {b.node("Reshape", {x, ints(b, "r4", {kSeq, kBatch, 3, kEmbed})}), ints(b, "u", {0})});
  ValueId t =
      b.node("Squeeze", {b.node("Transpose", {x5}, perm({3, 1, 2, 0, 4})), ints(b, "sq", {-2})});
  Attributes axis0;
  axis0.set("axis", int64_t(0));
  auto part = [&](int i) {
    ValueId g = b.node(
        "Gather", {t, b.constant("i" + std::to_string(i), Tensor::from_vector<int64_t>({i}, {}))},
        axis0);
    ValueId r =
        b.node("Reshape", {g, ints(b, "h" + std::to_string(i), {kSeq, kBatch * kHeads, kDim})});
    ValueId bh = b.node("Transpose", {r}, perm({1, 0, 2}));
    return b.node("Reshape", {bh, ints(b, "b" + std::to_string(i), {kBatch, kHeads, kSeq, kDim})});
  };
  const float root = std::pow(float(kDim), -0.25f);
  ValueId q = b.node("Mul", {part(0), scalar(b, "cq", root)});
  ValueId kt =
      b.node("Mul", {b.node("Transpose", {part(1)}, perm({0, 1, 3, 2})), scalar(b, "ck", root)});
  ValueId o = b.node("MatMul", {b.node("Softmax", {b.node("MatMul", {q, kt})}), part(2)});
  b.output(b.node("Reshape", {b.node("Transpose", {o}, perm({2, 0, 1, 3})),
                              ints(b, "y", {kSeq, kBatch, kEmbed})}));
  return b.g;
}

// Swin's shifted-window attention: q, k, v [images * windows, heads,
// tokens, dim], a relative-position bias per head and a mask per window
// added through a reshape of the scores, and a Dropout of ratio 0 kept
// in training mode by the export; y [images * windows, heads, tokens, dim].
constexpr int64_t kImages = 2, kWindows = 2, kTokens = 7;

Graph windows_graph(const Tensor& bias, const Tensor& mask) {
  GraphBuilder b;
  const Shape s{kImages * kWindows, kHeads, kTokens, kDim};
  ValueId q = b.node("Mul", {b.input("q", s), scalar(b, "scale", 1.f / std::sqrt(float(kDim)))});
  ValueId kt = b.node("Transpose", {b.input("k", s)}, perm({0, 1, 3, 2}));
  ValueId v = b.input("v", s);
  ValueId scores = b.node("Add", {b.node("MatMul", {q, kt}), b.constant("bias", bias)});
  ValueId per_image =
      b.node("Reshape", {scores, ints(b, "r5", {kImages, kWindows, kHeads, kTokens, kTokens})});
  ValueId masked = b.node("Add", {per_image, b.constant("mask", mask)});
  ValueId back =
      b.node("Reshape", {masked, ints(b, "r4", {kImages * kWindows, kHeads, kTokens, kTokens})});
  ValueId p = b.node("Softmax", {back});
  Tensor training = Tensor::empty(DType::boolean, {});
  *static_cast<uint8_t*>(training.raw()) = 1;
  ValueId kept = b.node("Dropout", {p, scalar(b, "ratio", 0.f), b.constant("training", training)});
  b.output(b.node("MatMul", {kept, v}));
  return b.g;
}

// softmax(q k^T / sqrt(d)) v per (batch, head), from x [seq, batch,
// q | k | v] into y [seq, batch, heads * dim].
Tensor reference(const Tensor& x) {
  Tensor y = Tensor::empty(DType::f32, {kSeq, kBatch, kEmbed});
  auto at = [&](int64_t s, int64_t b, int64_t part, int64_t h, int64_t c) {
    int64_t row = s * kBatch + b;
    return double(x.scalar_at(row * 3 * kEmbed + part * kEmbed + h * kDim + c));
  };
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < kSeq; ++i) {
        std::vector<double> p(kSeq);
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < kSeq; ++j) {
          double s = 0;
          for (int64_t c = 0; c < kDim; ++c) s += at(i, b, 0, h, c) * at(j, b, 1, h, c);
          p[size_t(j)] = s / std::sqrt(double(kDim));
          top = std::max(top, p[size_t(j)]);
        }
        for (double& v : p) sum += (v = std::exp(v - top));
        for (int64_t c = 0; c < kDim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < kSeq; ++j) acc += p[size_t(j)] / sum * at(j, b, 2, h, c);
          int64_t row = i * kBatch + b;
          y.data<float>()[row * kEmbed + h * kDim + c] = float(acc);
        }
      }
  return y;
}

Tensor windows_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                         const Tensor& mask) {
  Tensor y = Tensor::empty(DType::f32, q.shape());
  const int64_t hd = kTokens * kDim;
  for (int64_t b = 0; b < kImages * kWindows; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < kTokens; ++i) {
        const int64_t base = (b * kHeads + h) * hd;
        std::vector<double> p(kTokens);
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < kTokens; ++j) {
          double s = 0;
          for (int64_t c = 0; c < kDim; ++c)
            s += double(q.scalar_at(base + i * kDim + c)) * k.scalar_at(base + j * kDim + c);
          s = s / std::sqrt(double(kDim)) + bias.scalar_at((h * kTokens + i) * kTokens + j) +
              mask.scalar_at(((b % kWindows) * kTokens + i) * kTokens + j);
          top = std::max(top, p[size_t(j)] = s);
        }
        for (double& e : p) sum += (e = std::exp(e - top));
        for (int64_t c = 0; c < kDim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < kTokens; ++j)
            acc += p[size_t(j)] / sum * v.scalar_at(base + j * kDim + c);
          y.data<float>()[base + i * kDim + c] = float(acc);
        }
      }
  return y;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += !node.dead && node.op_type == op;
  return n;
}

}  // namespace

TEST(FuseAttention, FusesTheExportedFormsOnly) {
  const struct {
    Form form;
    int fused;
    int transposes_left;
  } cases[] = {{Form::slices, 1, 0},
               {Form::gathers, 1, 1},
               {Form::scores_also_output, 0, 4},
               {Form::softmax_other_axis, 0, 4}};
  for (const auto& c : cases) {
    Graph g = c.form == Form::gathers ? gathers_graph() : slices_graph(c.form);
    infer_and_fold(g, cpu::cpu_backend());
    ASSERT_EQ(fuse_attention(g), c.fused) << int(c.form);
    EXPECT_EQ(count(g, ops::kAttentionOp), c.fused) << int(c.form);
    // The head copies go; the gathers form keeps its one [3, ...] transpose,
    // whose result the three heads share.
    EXPECT_EQ(count(g, "Transpose"), c.transposes_left) << int(c.form);
    if (!c.fused) continue;
    const Shape xs = g.value(g.inputs[0]).shape;
    Tensor x = random_tensor(xs, 11, -2.f, 2.f);
    Session s(std::move(g));
    Tensor got = s.run({x})[0];
    Tensor want = reference(x);
    EXPECT_LE(max_abs_diff(got, want), 1e-5 * max_abs(want)) << int(c.form);
  }
}

TEST(FuseAttention, TakesSwinsBiasesThroughAReshape) {
  const Tensor bias = random_tensor({1, kHeads, kTokens, kTokens}, 21, -2.f, 2.f);
  const Tensor mask = random_tensor({1, kWindows, 1, kTokens, kTokens}, 22, -3.f, 0.f);
  Graph g = windows_graph(bias, mask);
  infer_and_fold(g, cpu::cpu_backend());
  ASSERT_EQ(fuse_attention(g), 1);
  EXPECT_EQ(count(g, "Add") + count(g, "Dropout") + count(g, "Softmax"), 0);
  const Shape s{kImages * kWindows, kHeads, kTokens, kDim};
  const Tensor q = random_tensor(s, 23, -2.f, 2.f), k = random_tensor(s, 24, -2.f, 2.f),
               v = random_tensor(s, 25);
  Session session(std::move(g));
  const Tensor got = session.run({q, k, v})[0];
  const Tensor want = windows_reference(q, k, v, bias, mask);
  EXPECT_LE(max_abs_diff(got, want), 1e-5 * max_abs(want));
}
