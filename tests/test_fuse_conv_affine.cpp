// fuse_conv_epilogues (graph/passes.h) on what TF.js exporters leave after a
// convolution whose batch norm was folded away by hand: Mul and Add by
// constants of one value per output channel (the scale joins the weights,
// the shift the bias) and clip_by_value, with or without a Relu before it
// (Clip). Constants that vary along H or W stay, and an Add that begins a
// written-out hard-sigmoid is left to it. Reference: the same ops one by one on the CPU backend
// (op_harness, no fusion), 1e-5 x max|ref|.
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/session.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr int64_t kIn = 8, kOut = 16;

struct Chain {
  int64_t group = 1;
  Shape scale_shape{kOut, 1, 1};  // the Mul's constant
  bool relu = true;
  float lo = 0.f, hi = 6.f;
  bool min_first = true;
};

Tensor scalar(float v) { return Tensor::from_vector<float>({v}, {}); }

Attributes conv_attrs(int64_t group) {
  Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("group", group);
  return a;
}

// x -> Conv -> Mul(s) -> Add(c) -> [Relu] -> Min(hi)/Max(lo) in either order.
Graph chain_graph(const Chain& c, const Tensor& w, const Tensor& s, const Tensor& b) {
  GraphBuilder g;
  ValueId y =
      g.node("Conv", {g.input("x", {2, kIn, 6, 6}), g.constant("w", w)}, conv_attrs(c.group));
  y = g.node("Mul", {y, g.constant("s", s)});
  y = g.node("Add", {g.constant("b", b), y});
  if (c.relu) y = g.node("Relu", {y});
  const ValueId hi = g.constant("hi", scalar(c.hi)), lo = g.constant("lo", scalar(c.lo));
  y = c.min_first ? g.node("Max", {g.node("Min", {y, hi}), lo})
                  : g.node("Min", {g.node("Max", {lo, y}), hi});
  g.output(y);
  return g.g;
}

Tensor reference(const Chain& c, const Tensor& x, const Tensor& w, const Tensor& s,
                 const Tensor& b) {
  Tensor y = run_op_cpu(make_call("Conv", conv_attrs(c.group), {x, w}, {false, true}))[0];
  y = run_op_cpu(make_call("Mul", {}, {y, s}, {}))[0];
  y = run_op_cpu(make_call("Add", {}, {b, y}, {}))[0];
  if (c.relu) y = run_op_cpu(make_call("Relu", {}, {y}, {}))[0];
  if (c.min_first) {
    y = run_op_cpu(make_call("Min", {}, {y, scalar(c.hi)}, {}))[0];
    return run_op_cpu(make_call("Max", {}, {y, scalar(c.lo)}, {}))[0];
  }
  y = run_op_cpu(make_call("Max", {}, {scalar(c.lo), y}, {}))[0];
  return run_op_cpu(make_call("Min", {}, {y, scalar(c.hi)}, {}))[0];
}

// The live nodes of g after the pass, by op type.
std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes)
    if (!n.dead) out.push_back(n.op_type);
  return out;
}

void check(const Chain& c, const std::vector<std::string>& want_ops,
           const std::string& want_activation) {
  const Tensor w = random_tensor({kOut, kIn / c.group, 3, 3}, 1);
  const Tensor s = random_tensor(c.scale_shape, 2, -2.f, 2.f),
               b = random_tensor({1, kOut, 1, 1}, 3);
  const Tensor x = random_tensor({2, kIn, 6, 6}, 4, -3.f, 3.f);
  Graph g = chain_graph(c, w, s, b);
  infer_and_fold(g, cpu::cpu_backend());
  fuse_conv_epilogues(g);
  EXPECT_EQ(ops_of(g), want_ops);
  for (const Node& n : g.nodes)
    if (!n.dead && n.op_type == "tandem.FusedConv") {
      EXPECT_EQ(n.attrs.get_string("activation", ""), want_activation);
    }
  Session session(std::move(g));
  const Tensor got = session.run({x})[0];
  const Tensor want = reference(c, x, w, s, b);
  EXPECT_LE(max_abs_diff(got, want), 1e-5 * max_abs(want));
}

}  // namespace

TEST(FuseConvAffine, BatchNormAndRelu6WrittenOutBecomeOneConv) {
  check({}, {"tandem.FusedConv"}, "Clip");
}

TEST(FuseConvAffine, DepthwiseConvAndMaxBeforeMin) {
  Chain c;
  c.group = kIn;  // 8 groups: 16 outputs, 2 a group
  c.min_first = false;
  check(c, {"tandem.FusedConv"}, "Clip");
}

TEST(FuseConvAffine, ClipByValueWithoutRelu) {
  Chain c;
  c.relu = false;
  c.lo = -1.f, c.hi = 4.f;
  c.scale_shape = {1};  // one factor for every channel
  check(c, {"tandem.FusedConv"}, "Clip");
}

TEST(FuseConvAffine, ScaleVaryingOverTheImageStays) {
  Chain c;
  c.scale_shape = {kOut, 6, 6};
  check(c, {"tandem.FusedConv", "Mul", "Add", "Relu", "Min", "Max"}, "");
}

TEST(FuseConvAffine, BoundsThatCrossStayUnfused) {
  Chain c;
  c.lo = 5.f, c.hi = 2.f;  // max(min(y, 2), 5) is 5 everywhere: not a clip
  check(c, {"tandem.FusedConv", "Min", "Max"}, "Relu");
}

// hard_sigmoid written out, relu6(y + 3) / 6: its Add of 3 is the
// activation's, not a shift for the bias.
TEST(FuseConvAffine, HardSigmoidKeepsItsAdd) {
  const Tensor w = random_tensor({kOut, kIn, 3, 3}, 5);
  GraphBuilder b;
  ValueId y = b.node("Conv", {b.input("x", {2, kIn, 6, 6}), b.constant("w", w)}, conv_attrs(1));
  y = b.node("Add", {y, b.constant("three", scalar(3.f))});
  y = b.node("Clip", {y, b.constant("zero", scalar(0.f)), b.constant("six", scalar(6.f))});
  b.output(b.node("Mul", {y, b.constant("sixth", scalar(1.f / 6))}));
  Graph g = std::move(b.g);
  infer_and_fold(g, cpu::cpu_backend());
  fuse_conv_epilogues(g);
  ASSERT_EQ(ops_of(g), std::vector<std::string>{"tandem.FusedConv"});
  for (const Node& n : g.nodes)
    if (!n.dead) EXPECT_EQ(n.attrs.get_string("activation", ""), "HardSigmoid");
}
