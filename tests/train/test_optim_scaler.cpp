// The dynamic loss scaler against torch.cuda.amp.GradScaler's documented
// behaviour (init 65536, x2 after 2000 clean steps, x0.5 and a skipped step
// on inf/nan). PyTorch 1.13 has no CPU kernels for GradScaler
// (_amp_update_scale_ and _amp_foreach_non_finite_check_and_unscale_ are
// CUDA-only), so the expected sequences here come from those semantics, with
// fp16 overflow produced by core/half.h's conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/half.h"
#include "tests/train/optim_test_util.h"
#include "train/optim/loss_scaler.h"
#include "train/optim/sgd.h"

namespace tandem::train {
namespace {

using testing::Quadratic;

// Backward of (loss * scale) in fp16: each gradient scaled, rounded to half
// (values past 65504 become inf), widened back to the fp32 master gradient.
void fp16_scaled_gradients(Quadratic& q, float scale) {
  q.gradients();
  for (auto& p : q.params)
    for (int64_t k = 0; k < p.grad.numel(); ++k) {
      float& g = p.grad.data<float>()[k];
      g = f16_to_float(float_to_f16(g * scale));
    }
}

TEST(LossScaler, StartsAt65536AndUnscalesExactly) {
  Quadratic q(2);
  q.gradients();
  Tensor want = q.params[0].grad.clone();
  LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0f);
  for (int64_t k = 0; k < want.numel(); ++k) q.params[0].grad.data<float>()[k] *= scaler.scale();
  EXPECT_FALSE(scaler.unscale({&q.params[0]}));
  testing::expect_same(q.params[0].grad, want, "unscaled gradient (power-of-two scale is exact)");
  EXPECT_THROW(scaler.unscale({&q.params[0]}), Error);  // twice in one iteration
}

TEST(LossScaler, OverflowSkipsTheStepAndHalvesTheScale) {
  Quadratic q(2);
  Sgd opt(q.list(), SgdOptions{0.1, 0.9});
  LossScaler scaler;
  // With the scale at 65536 every gradient above 1 overflows half.
  fp16_scaled_gradients(q, scaler.scale());
  Tensor before = q.values();
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  testing::expect_same(q.values(), before, "parameters after a skipped step");
  EXPECT_EQ(opt.steps(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  // Halving continues until the scaled gradients fit fp16, then steps go on.
  int skipped = 1;
  for (int i = 0; i < 20; ++i) {
    fp16_scaled_gradients(q, scaler.scale());
    skipped += !scaler.step(opt);
    scaler.update();
  }
  EXPECT_EQ(scaler.skipped_steps(), skipped);
  EXPECT_EQ(opt.steps(), 21 - skipped);
  EXPECT_GT(opt.steps(), 10);
  EXPECT_LT(scaler.scale(), 32768.0f);
}

TEST(LossScaler, GrowsAfterGrowthIntervalCleanStepsAndACleanRunResetsOnOverflow) {
  Parameter p{"w", Tensor::zeros(DType::f32, {1}), Tensor::zeros(DType::f32, {1})};
  Sgd opt({&p}, SgdOptions{0.1});
  LossScaler scaler;  // torch's defaults
  auto iterate = [&](float grad) {
    p.grad.data<float>()[0] = grad;
    bool stepped = scaler.step(opt);
    scaler.update();
    return stepped;
  };
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(iterate(1.0f));
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_TRUE(iterate(1.0f));
  EXPECT_EQ(scaler.scale(), 131072.0f);  // the 2000th clean step doubles it
  for (int i = 0; i < 1500; ++i) iterate(1.0f);
  EXPECT_FALSE(iterate(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  for (int i = 0; i < 1999; ++i) iterate(1.0f);
  EXPECT_EQ(scaler.scale(), 65536.0f);  // the count restarted at the overflow
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(LossScaler, ScaleNeverGrowsToInfinity) {
  Parameter p{"w", Tensor::zeros(DType::f32, {1}), Tensor::zeros(DType::f32, {1})};
  Sgd opt({&p}, SgdOptions{0.1});
  LossScaler scaler(LossScalerOptions{std::ldexp(1.0, 127), 2.0, 0.5, 1});
  scaler.step(opt);
  scaler.update();
  EXPECT_EQ(scaler.scale(), std::ldexp(1.0f, 127));
}

TEST(LossScaler, MisuseAndBadStateAreErrors) {
  LossScaler scaler;
  EXPECT_THROW(scaler.update(), Error);  // no overflow check this iteration
  EXPECT_THROW(scaler.load_state(LossScalerState{std::numeric_limits<float>::infinity(), 0, 0}), Error);
  EXPECT_THROW(scaler.load_state(LossScalerState{1.0f, 2000, 0}), Error);
  EXPECT_THROW(LossScaler(LossScalerOptions{65536, 0.5}), Error);
}

}  // namespace
}  // namespace tandem::train
