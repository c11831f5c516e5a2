// Layer modules: PyTorch state_dict names and order, PyTorch's default
// initialization (bounds, and the variance of U(-b, b), b^2 / 3, within 5%
// on 36,864 weights), seeded reproducibility, train/eval mode, weight-decay
// flags.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/train/grad_check.h"
#include "train/functional.h"
#include "train/layers.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

std::vector<std::string> names(Module& m) {
  std::vector<std::string> r;
  for (Parameter* p : m.parameters()) r.push_back(p->name);
  for (Buffer* b : m.buffers()) r.push_back(b->name);
  return r;
}

}  // namespace

TEST(Layers, SequentialNames) {
  Rng rng(1);
  Sequential s;
  s.emplace<Conv2d>(3, 8, 3, Conv2dOptions{.padding = 1}, rng);
  s.emplace<BatchNorm2d>(8);
  s.emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
  s.emplace<Flatten>();
  s.emplace<Linear>(8, 2, true, rng);
  std::vector<std::string> want{"0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias",
                                "1.running_mean", "1.running_var", "1.num_batches_tracked"};
  EXPECT_EQ(names(s), want);
}

TEST(Layers, BasicBlockNamesAsTorchvision) {
  Rng rng(1);
  Sequential layer;
  layer.emplace<BasicBlock>(4, 8, 2, rng);
  layer.emplace<BasicBlock>(8, 8, 1, rng);
  std::vector<std::string> params;
  for (Parameter* p : layer.parameters()) params.push_back(p->name);
  std::vector<std::string> want{"0.conv1.weight", "0.bn1.weight", "0.bn1.bias", "0.conv2.weight", "0.bn2.weight",
                                "0.bn2.bias", "0.downsample.0.weight", "0.downsample.1.weight",
                                "0.downsample.1.bias", "1.conv1.weight", "1.bn1.weight", "1.bn1.bias",
                                "1.conv2.weight", "1.bn2.weight", "1.bn2.bias"};
  EXPECT_EQ(params, want);
}

TEST(Layers, DefaultInitialization) {
  Rng rng(7);
  Conv2d conv(64, 64, 3, Conv2dOptions{}, rng);  // fan_in 576
  ParameterList p = conv.parameters();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0]->value.shape(), (Shape{64, 64, 3, 3}));
  double bound = 1 / std::sqrt(576.0), sq = 0;
  Doubles w = to_doubles(p[0]->value);
  for (double v : w) {
    ASSERT_LE(std::fabs(v), bound);
    sq += v * v;
  }
  EXPECT_NEAR(sq / double(w.size()), bound * bound / 3, 0.05 * bound * bound / 3);
  for (double v : to_doubles(p[1]->value)) ASSERT_LE(std::fabs(v), bound);
  for (double v : to_doubles(p[0]->grad)) ASSERT_EQ(v, 0);
  EXPECT_TRUE(p[0]->decay);
  EXPECT_FALSE(p[1]->decay);

  BatchNorm2d bn(5);
  ParameterList q = bn.parameters();
  EXPECT_EQ(to_doubles(q[0]->value), Doubles(5, 1.0));
  EXPECT_EQ(to_doubles(q[1]->value), Doubles(5, 0.0));
  EXPECT_FALSE(q[0]->decay);
}

TEST(Layers, GroupedConvFanIn) {
  Rng rng(3);
  Conv2d dw(32, 32, 3, Conv2dOptions{.groups = 32}, rng);  // fan_in 9: bound 1/3
  double m = max_abs(to_doubles(dw.parameters()[0]->value));
  EXPECT_LE(m, 1 / 3.0);
  EXPECT_GT(m, 0.3);  // 288 draws of U(-1/3, 1/3) come this close to the bound
  EXPECT_THROW(Conv2d(6, 4, 3, Conv2dOptions{.groups = 4}, rng), Error);
}

TEST(Layers, SeededAndReproducible) {
  Rng a(42), b(42), c(43);
  Linear la(10, 5, true, a), lb(10, 5, true, b), lc(10, 5, true, c);
  EXPECT_EQ(to_doubles(la.parameters()[0]->value), to_doubles(lb.parameters()[0]->value));
  EXPECT_NE(to_doubles(la.parameters()[0]->value), to_doubles(lc.parameters()[0]->value));
}

TEST(Layers, TrainAndEvalModes) {
  Rng rng(1);
  Sequential s;
  auto& bn = s.emplace<BatchNorm2d>(2);
  auto& drop = s.emplace<Dropout>(0.5f, rng);
  Var x(random_tensor({4, 2, 3, 3}, 1, 1, 3));
  Buffer* mean = s.buffers()[0];
  s.eval();
  EXPECT_FALSE(bn.training());
  EXPECT_FALSE(drop.training());
  s.forward(x);
  EXPECT_EQ(to_doubles(mean->value), Doubles(2, 0.0));  // eval: running stats untouched
  EXPECT_EQ(s.buffers()[2]->value.scalar_at(0), 0);     // num_batches_tracked
  s.train();
  EXPECT_TRUE(drop.training());
  s.forward(x);
  EXPECT_GT(mean->value.scalar_at(0), 0.05);  // moved toward the batch mean (about 2)
  EXPECT_EQ(s.buffers()[2]->value.scalar_at(0), 1);
}

TEST(Layers, DropoutDrawsANewMaskEachCall) {
  Rng rng(1);
  Dropout d(0.5f, rng);
  Var x(Tensor::from_vector(std::vector<float>(256, 1.f), {256}));
  EXPECT_NE(to_doubles(d(x).value()), to_doubles(d(x).value()));
}

TEST(Layers, BackwardFillsEveryParameter) {
  Rng rng(5);
  Sequential s;
  s.emplace<Conv2d>(2, 4, 3, Conv2dOptions{.stride = 2, .padding = 1}, rng);
  s.emplace<BatchNorm2d>(4);
  s.emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
  s.emplace<BasicBlock>(4, 6, 2, rng);
  s.emplace<GlobalAvgPool2d>();
  s.emplace<Flatten>();
  s.emplace<Linear>(6, 3, true, rng);
  Var loss = cross_entropy(s(Var(random_tensor({3, 2, 8, 8}, 2))), Tensor::from_vector(std::vector<int64_t>{0, 2, 1}, {3}));
  backward(loss);
  for (Parameter* p : s.parameters()) EXPECT_GT(max_abs(to_doubles(p->grad)), 0) << p->name;
}
