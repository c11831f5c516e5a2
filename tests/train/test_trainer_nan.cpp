// NaN/Inf in the loss (train/trainer.h): the step is skipped (no update,
// batch-norm running statistics and dropout state as before), counted and
// reported; a loss that stays non-finite for max_bad_steps steps in a row is
// an Error, never a silently ruined model.
#include <gtest/gtest.h>

#include "tests/train/trainer_test_util.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

TrainerOptions options(int64_t epochs, int64_t max_bad_steps) {
  TrainerOptions o;
  o.epochs = epochs, o.max_bad_steps = max_bad_steps;
  return o;
}

}  // namespace

TEST(TrainerNaN, ANonFiniteLossSkipsTheStepAndLeavesTheModelAsItWas) {
  auto data = random_dataset(48, 1, 16, 1);  // sample 16 (the second batch's first) is NaN
  TinyRun run(2, LrSchedule::constant(1e-3), options(1, 20));
  Trainer& t = *run.trainer;
  ASSERT_FALSE(t.train_step(whole(*data, 0, 16)).skipped);
  std::vector<std::string> before = run_bytes(t.state());

  StepResult bad = t.train_step(whole(*data, 16, 16));
  EXPECT_TRUE(bad.skipped);
  // NaN reaches the loss, or (after a ReLU that maps NaN to 0) only the gradients.
  EXPECT_TRUE(!std::isfinite(bad.loss) || !std::isfinite(bad.grad_norm)) << bad.loss << " " << bad.grad_norm;
  EXPECT_EQ(run_bytes(t.state()), before);
  EXPECT_EQ(t.state().skipped_steps, 1);
  EXPECT_EQ(t.state().step, 2);  // the schedule moves on
  EXPECT_EQ(run.optimizer->steps(), 1);

  StepResult good = t.train_step(whole(*data, 32, 16));
  EXPECT_FALSE(good.skipped);
  EXPECT_TRUE(std::isfinite(good.loss));
  EXPECT_NE(run_bytes(t.state()), before);
}

TEST(TrainerNaN, SkippedStepsAreCountedInTheEpochReport) {
  auto data = random_dataset(48, 1, 16, 1);
  TinyRun run(2, LrSchedule::constant(1e-3), options(2, 20));
  Trainer& t = *run.trainer;
  int64_t reported = 0;
  t.on_step = [&](const StepReport& r) { reported = r.skipped_steps; };
  DataLoader loader(*data, loader_options(16, false, 0));
  std::vector<EpochReport> epochs = t.fit(loader, nullptr);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].skipped_steps, 1);
  EXPECT_EQ(epochs[1].skipped_steps, 2);
  EXPECT_EQ(reported, 2);
  EXPECT_TRUE(std::isfinite(epochs[1].train_loss));  // the mean of the steps taken
  EXPECT_EQ(t.state().step, 6);
}

TEST(TrainerNaN, ALossThatStaysNonFiniteIsAnError) {
  auto data = random_dataset(64, 1, 0, 64);
  TinyRun run(2, LrSchedule::constant(1e-3), options(1, 3));
  Trainer& t = *run.trainer;
  DataLoader loader(*data, loader_options(16, false, 0));
  try {
    t.fit(loader, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 steps in a row"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.state().skipped_steps, 3);
}
