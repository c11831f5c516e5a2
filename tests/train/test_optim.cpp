// SGD and AdamW against torch.optim (Debian's PyTorch 1.13) on a toy
// quadratic, 20 steps: the gradients are bit-identical on both sides, so the
// only differences are float rounding inside the updates (torch's vectorized
// kernels fuse some multiply-adds). Tolerance 5e-7 relative to max(1, |p|).
#include <gtest/gtest.h>

#include "tests/train/optim_test_util.h"
#include "train/optim/adamw.h"
#include "train/optim/clip_grad.h"
#include "train/optim/lr_schedule.h"
#include "train/optim/sgd.h"

namespace tandem::train {
namespace {

using testing::py;
using testing::Quadratic;

constexpr int kSteps = 20;
constexpr double kTolerance = 5e-7;  // measured: at most 1.2e-7 (about 1 ulp at |p| ~ 1)

template <typename Opt, typename Options>
Tensor run_ours(const Options& options) {
  Quadratic q(7);
  Opt opt(q.list(), options);
  for (int i = 0; i < kSteps; ++i) {
    q.gradients();
    opt.step();
  }
  return q.values();
}

// Python that runs `make_optimizer` (using `groups`) for kSteps steps.
std::string torch_run(const std::string& make_optimizer) {
  return Quadratic::torch_setup() + "opt = " + make_optimizer + "\nfor _ in range(" + std::to_string(kSteps) +
         "):\n    grads()\n    opt.step()\nr = values()\n";
}

std::string groups(double weight_decay) {
  return "[{'params': decay, 'weight_decay': " + py(weight_decay) +
         "}, {'params': no_decay, 'weight_decay': 0.0}]";
}

TEST(Optim, SgdMatchesTorchWithMomentumNesterovDampeningAndDecay) {
  TANDEM_REQUIRE_TORCH();
  Quadratic q(7);
  std::vector<Tensor> inputs{q.values(), q.targets(), q.curvatures()};
  struct Case {
    SgdOptions o;
    const char* what;
  } cases[] = {{{0.1, 0, 0, 0, false}, "plain"},
               {{0.05, 0.9, 0, 1e-2, false}, "momentum + decay"},
               {{0.05, 0.9, 0, 5e-3, true}, "nesterov + decay"},
               {{0.1, 0.8, 0.25, 0, false}, "dampening"}};
  testing::NumpyChecks checks;
  for (const Case& c : cases) {
    std::string make = "torch.optim.SGD(" + groups(c.o.weight_decay) + ", lr=" + py(c.o.lr) +
                       ", momentum=" + py(c.o.momentum) + ", dampening=" + py(c.o.dampening) +
                       ", nesterov=" + (c.o.nesterov ? "True" : "False") + ")";
    checks.add(run_ours<Sgd>(c.o), torch_run(make), inputs, std::string("SGD ") + c.what, kTolerance);
  }
  checks.check();
}

TEST(Optim, AdamWMatchesTorchAndSkipsDecayWhereParametersOptOut) {
  TANDEM_REQUIRE_TORCH();
  Quadratic q(7);
  std::vector<Tensor> inputs{q.values(), q.targets(), q.curvatures()};
  AdamWOptions cases[] = {{1e-2, 0.9, 0.999, 1e-8, 1e-2}, {5e-2, 0.8, 0.99, 1e-6, 0.1}};
  testing::NumpyChecks checks;
  for (const AdamWOptions& o : cases) {
    std::string make = "torch.optim.AdamW(" + groups(o.weight_decay) + ", lr=" + py(o.lr) + ", betas=(" +
                       py(o.beta1) + ", " + py(o.beta2) + "), eps=" + py(o.eps) + ")";
    checks.add(run_ours<AdamW>(o), torch_run(make), inputs, "AdamW lr " + py(o.lr), kTolerance);
  }
  checks.check();
}

// The pieces together, as a training loop uses them: per-step lr from a
// warmup + cosine schedule, clipping, AdamW; against LinearLR + CosineAnnealingLR
// in a SequentialLR and clip_grad_norm_.
TEST(Optim, AdamWWithWarmupCosineScheduleAndClippingMatchesTorch) {
  TANDEM_REQUIRE_TORCH();
  Quadratic q(11);
  std::vector<Tensor> inputs{q.values(), q.targets(), q.curvatures()};
  LrSchedule schedule = LrSchedule::cosine(0.05, 15, 1e-3).with_warmup(5, 0.1);
  AdamW opt(q.list(), AdamWOptions{0.05, 0.9, 0.999, 1e-8, 1e-2});
  int clipped = 0;
  for (int t = 0; t < kSteps; ++t) {
    q.gradients();
    opt.set_lr(schedule.at(t));
    clipped += clip_grad_norm(q.list(), 1.0).clipped;
    opt.step();
  }
  EXPECT_GT(clipped, 0) << "the test should exercise clipping";
  std::string code = Quadratic::torch_setup() +
                     "import torch.optim.lr_scheduler as L\n"
                     "opt = torch.optim.AdamW(" + groups(1e-2) + ", lr=0.05)\n"
                     "s = L.SequentialLR(opt, [L.LinearLR(opt, start_factor=0.1, total_iters=5),\n"
                     "    L.CosineAnnealingLR(opt, T_max=15, eta_min=1e-3)], milestones=[5])\n"
                     "for _ in range(20):\n"
                     "    grads()\n"
                     "    torch.nn.utils.clip_grad_norm_(ps, 1.0)\n"
                     "    opt.step()\n"
                     "    s.step()\n"
                     "r = values()\n";
  testing::NumpyChecks checks;
  checks.add(q.values(), code, inputs, "AdamW + schedule + clipping", kTolerance);
  checks.check();
}

TEST(Optim, ZeroGradClearsEveryGradient) {
  Quadratic q(3);
  q.gradients();
  Sgd opt(q.list(), SgdOptions{});
  opt.zero_grad();
  for (const Parameter& p : q.params)
    for (int64_t k = 0; k < p.grad.numel(); ++k) ASSERT_EQ(p.grad.data<float>()[k], 0.0f) << p.name;
}

TEST(Optim, StepCountsAndStateNamesFollowTheParameters) {
  Quadratic q(3);
  AdamW opt(q.list(), AdamWOptions{});
  q.gradients();
  opt.step();
  EXPECT_EQ(opt.steps(), 1);
  OptimizerState s = opt.state();
  EXPECT_EQ(s.kind, "adamw");
  ASSERT_EQ(s.slots.size(), 6u);
  EXPECT_EQ(s.slots[0].first, "layer.weight.exp_avg");
  EXPECT_EQ(s.slots[5].first, "conv.weight.exp_avg_sq");
  EXPECT_EQ(s.slots[5].second.shape(), (Shape{2, 3, 2}));
}

TEST(Optim, BadParametersAndOptionsAreErrorsNamingThem) {
  Parameter p{"head.weight", Tensor::zeros(DType::f32, {3, 4}), Tensor::zeros(DType::f32, {4, 3})};
  try {
    Sgd opt({&p}, SgdOptions{});
    FAIL() << "mismatched gradient accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head.weight"), std::string::npos) << e.what();
  }
  Parameter ok{"w", Tensor::zeros(DType::f32, {2}), Tensor::zeros(DType::f32, {2})};
  EXPECT_THROW(Sgd({&ok}, SgdOptions{0.1, 0, 0, 0, true}), Error);  // Nesterov without momentum
  EXPECT_THROW(AdamW({&ok}, AdamWOptions{1e-3, 1.0, 0.999, 1e-8, 0}), Error);
  EXPECT_THROW(Sgd({&ok}, SgdOptions{-1.0}), Error);
}

}  // namespace
}  // namespace tandem::train
