// Learning-rate schedules against torch.optim.lr_scheduler (StepLR,
// CosineAnnealingLR, LinearLR warmup chained by SequentialLR; torch computes
// them recursively, we in closed form: tolerance 1e-12 relative) and gradient
// clipping against torch.nn.utils.clip_grad_norm_ (norm accumulated in double
// here, in float there: 1e-6 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/train/optim_test_util.h"
#include "train/optim/clip_grad.h"
#include "train/optim/lr_schedule.h"

namespace tandem::train {
namespace {

using testing::py;
using testing::Quadratic;

Tensor lrs_of(const LrSchedule& s, int steps) {
  std::vector<double> out;
  for (int t = 0; t < steps; ++t) out.push_back(s.at(t));
  return Tensor::from_vector(out, {steps});
}

// Python recording the lr torch uses at each of `steps` iterations under the
// scheduler built by `make` (from `opt`, lr 0.1, and `L`).
std::string torch_lrs(const std::string& make, int steps) {
  return "import torch\nimport torch.optim.lr_scheduler as L\n"
         "opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)\n"
         "s = " + make + "\n"
         "lrs = []\n"
         "for _ in range(" + std::to_string(steps) + "):\n"
         "    lrs.append(opt.param_groups[0]['lr'])\n"
         "    opt.step()\n"
         "    s.step()\n"
         "r = np.array(lrs)\n";
}

TEST(LrSchedule, MatchesTorchSchedulersPerIteration) {
  TANDEM_REQUIRE_TORCH();
  const int steps = 30;
  testing::NumpyChecks checks;
  checks.add(lrs_of(LrSchedule::step(0.1, 4, 0.5), steps), torch_lrs("L.StepLR(opt, step_size=4, gamma=0.5)", steps),
             {}, "step", 1e-12);
  checks.add(lrs_of(LrSchedule::cosine(0.1, steps, 0.002), steps),
             torch_lrs("L.CosineAnnealingLR(opt, T_max=30, eta_min=0.002)", steps), {}, "cosine", 1e-12);
  checks.add(lrs_of(LrSchedule::step(0.1, 3, 0.7).with_warmup(6, 0.25), steps),
             torch_lrs("L.SequentialLR(opt, [L.LinearLR(opt, start_factor=0.25, total_iters=6), "
                       "L.StepLR(opt, step_size=3, gamma=0.7)], milestones=[6])",
                       steps),
             {}, "warmup + step", 1e-12);
  checks.add(lrs_of(LrSchedule::cosine(0.1, 22, 0.0).with_warmup(8, 0.01), steps),
             torch_lrs("L.SequentialLR(opt, [L.LinearLR(opt, start_factor=0.01, total_iters=8), "
                       "L.CosineAnnealingLR(opt, T_max=22, eta_min=0.0)], milestones=[8])",
                       steps),
             {}, "warmup + cosine", 1e-12);
  checks.check();
}

TEST(LrSchedule, CosineHoldsItsMinimumAfterTheDecayAndBadArgumentsThrow) {
  LrSchedule s = LrSchedule::cosine(1.0, 10, 0.1).with_warmup(2, 0.5);
  EXPECT_DOUBLE_EQ(s.at(0), 0.5);
  EXPECT_DOUBLE_EQ(s.at(2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(12), 0.1);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
  EXPECT_DOUBLE_EQ(LrSchedule::constant(0.3).at(99), 0.3);
  EXPECT_THROW(LrSchedule::step(0.1, 0, 0.5), Error);
  EXPECT_THROW(LrSchedule::cosine(0.1, 10, 0.2), Error);
  EXPECT_THROW(LrSchedule::constant(0.1).with_warmup(3, 0.0), Error);
  EXPECT_THROW(s.at(-1), Error);
}

std::vector<Tensor> gradients_of(const Quadratic& q) {
  std::vector<Tensor> g;
  for (const auto& p : q.params) g.push_back(p.grad.clone());
  return g;
}

// Python: clip the gradients `grads()` gives at max_norm; r = [norm, grads...].
std::string torch_clip(double max_norm) {
  return Quadratic::torch_setup() + "grads()\n"
         "n = torch.nn.utils.clip_grad_norm_(ps, " + py(max_norm) + ")\n"
         "r = np.concatenate([[n.item()], np.concatenate([p.grad.numpy().ravel() for p in ps])]).astype(np.float32)\n";
}

TEST(ClipGradNorm, MatchesTorchAboveAndBelowTheLimit) {
  TANDEM_REQUIRE_TORCH();
  testing::NumpyChecks checks;
  for (double max_norm : {0.5, 100.0}) {
    Quadratic q(5);
    q.gradients();
    ClipResult r = clip_grad_norm(q.list(), max_norm);
    EXPECT_TRUE(r.finite);
    EXPECT_EQ(r.clipped, max_norm < r.total_norm);
    std::vector<Tensor> parts{Tensor::from_vector(std::vector<float>{float(r.total_norm)}, {1})};
    for (const Tensor& g : gradients_of(q)) parts.push_back(g);
    checks.add(Quadratic::flat(parts), torch_clip(max_norm), {q.values(), q.targets(), q.curvatures()},
               "clip at " + py(max_norm), 1e-6);
  }
  checks.check();
}

TEST(ClipGradNorm, NonFiniteNormIsReportedAndGradientsAreLeftAlone) {
  Quadratic q(5);
  q.gradients();
  q.params[2].grad.data<float>()[3] = std::numeric_limits<float>::infinity();
  std::vector<Tensor> before = gradients_of(q);
  ClipResult r = clip_grad_norm(q.list(), 1.0);
  EXPECT_FALSE(r.finite);
  EXPECT_TRUE(std::isinf(r.total_norm));
  EXPECT_FALSE(r.clipped);
  for (size_t i = 0; i < before.size(); ++i) testing::expect_same(q.params[i].grad, before[i], q.params[i].name);
  q.params[2].grad.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(clip_grad_norm(q.list(), 1.0).total_norm));
  try {
    clip_grad_norm(q.list(), 1.0, NonFinite::error);
    FAIL() << "non-finite norm not raised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::train
