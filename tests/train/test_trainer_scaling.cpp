// Dynamic loss scaling in the training loop (TrainerOptions::loss_scaling,
// fp16's companion; exercised here in f32 on the CPU): backward starts from
// the scale and the gradients are unscaled before clipping and the step.
// A power-of-two scale changes no bit of an f32 run; an overflow skips the
// step, leaves the model as it was, counts the skip and halves the scale;
// data-parallel ranks skip together when one rank's gradients overflow.
#include <gtest/gtest.h>

#include <thread>

#include "tests/train/thread_world.h"
#include "tests/train/trainer_test_util.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

TrainerOptions scaled(double init_scale) {
  TrainerOptions o;
  o.clip_grad_norm = 10;
  o.loss_scaling = LossScalerOptions{.init_scale = init_scale, .growth_interval = 3};
  return o;
}

}  // namespace

TEST(TrainerScaling, APowerOfTwoScaleChangesNoBit) {
  auto data = random_dataset(64, 5);
  TrainerOptions unscaled = scaled(1);
  unscaled.loss_scaling.reset();
  TinyRun plain(3, LrSchedule::constant(1e-3), unscaled);
  TinyRun with_scale(3, LrSchedule::constant(1e-3), scaled(1024));
  for (int64_t b = 0; b < 4; ++b) {
    StepResult p = plain.trainer->train_step(whole(*data, b * 16, 16));
    StepResult s = with_scale.trainer->train_step(whole(*data, b * 16, 16));
    EXPECT_FALSE(s.skipped);
    EXPECT_EQ(p.loss, s.loss) << "step " << b;
    EXPECT_EQ(p.grad_norm, s.grad_norm) << "step " << b;
  }
  EXPECT_TRUE(run_bytes(plain.trainer->state()) == run_bytes(with_scale.trainer->state())) << "the runs differ";
  // Three clean steps in a row grew the scale once.
  EXPECT_EQ(with_scale.trainer->state().scaler->scale(), 2048.f);
}

TEST(TrainerScaling, AnOverflowSkipsTheStepAndHalvesTheScale) {
  // lenet5 (no batch norm) on inputs of +-1e4: its gradients are far above
  // 1, so a scale near the float maximum overflows them, the loss being fine.
  Rng rng(4);
  auto model = make_model("lenet5", ModelConfig{1, 12, 12, 4, 0}, rng);
  AdamW opt(model->parameters(), AdamWOptions{.lr = 1e-3});
  Trainer t(*model, opt, LrSchedule::constant(1e-3), scaled(3e38));
  Batch b{random_tensor({16, 1, 12, 12}, 7, -1e4, 1e4), Tensor::empty(DType::i64, {16}), 0, 0};
  for (int64_t i = 0; i < 16; ++i) b.labels.data<int64_t>()[i] = i % 4;
  std::vector<std::string> before = run_bytes(t.state());
  StepResult r = t.train_step(b);
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(std::isfinite(r.loss)) << "the loss itself was fine";
  EXPECT_TRUE(run_bytes(t.state()) == before) << "the skipped step changed the model";
  EXPECT_EQ(t.state().skipped_steps, 1);
  EXPECT_EQ(t.state().scaler->skipped_steps(), 1);
  EXPECT_EQ(t.state().scaler->scale(), 1.5e38f);
  EXPECT_EQ(opt.steps(), 0);
  // Halved until the gradients fit: training goes on.
  int64_t steps = 0;
  for (int i = 0; i < 19 && opt.steps() == 0; ++i, ++steps) t.train_step(b);
  EXPECT_EQ(opt.steps(), 1) << "no step after " << steps << " more halvings";
}

TEST(TrainerScaling, RanksSkipTogetherWhenOneOverflows) {
  // Two data-parallel ranks (threads) with one global batch: rank 1's half
  // has inputs of +-1e4, whose gradients overflow at a scale of 1e36; rank
  // 0's half, of +-1e-3, alone would not. The gradients are summed before
  // they are unscaled, so both ranks see the overflow: both skip the step
  // and halve the scale, and their models stay identical.
  auto half = [](int rank) {
    const float range = rank == 0 ? 1e-3f : 1e4f;
    Batch b{random_tensor({16, 1, 12, 12}, uint64_t(7 + rank), -range, range), Tensor::empty(DType::i64, {16}), 0,
            0, 32};
    for (int64_t i = 0; i < 16; ++i) b.labels.data<int64_t>()[i] = (i + rank) % 4;
    return b;
  };
  struct Rank {
    std::unique_ptr<Sequential> model;
    std::unique_ptr<AdamW> opt;
    std::unique_ptr<Trainer> trainer;
    StepResult first;
  };
  auto make = [](Communicator* comm) {
    Rank r;
    Rng rng(4);
    r.model = make_model("lenet5", ModelConfig{1, 12, 12, 4, 0}, rng);
    r.opt = std::make_unique<AdamW>(r.model->parameters(), AdamWOptions{.lr = 1e-3});
    TrainerOptions o = scaled(1e36);
    o.communicator = comm;
    r.trainer = std::make_unique<Trainer>(*r.model, *r.opt, LrSchedule::constant(1e-3), o);
    return r;
  };
  Rank alone = make(nullptr);
  EXPECT_FALSE(alone.trainer->train_step(half(0)).skipped) << "rank 0's half alone overflows: the test proves nothing";

  ThreadWorld world(2);
  ThreadRank comms[2] = {{world, 0}, {world, 1}};
  Rank ranks[2];
  std::thread threads[2];
  for (int k = 0; k < 2; ++k)
    threads[k] = std::thread([&, k] {
      std::unique_lock<std::mutex> turn = world.hold_turn();
      ranks[k] = make(&comms[k]);
      ranks[k].first = ranks[k].trainer->train_step(half(k));
    });
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(ranks[k].first.skipped) << "rank " << k;
    EXPECT_EQ(ranks[k].trainer->state().scaler->scale(), 5e35f) << "rank " << k;
    EXPECT_EQ(ranks[k].opt->steps(), 0) << "rank " << k;
  }
  EXPECT_EQ(ranks[0].first.loss, ranks[1].first.loss) << "the global batch's loss on both";
  EXPECT_TRUE(run_bytes(ranks[0].trainer->state()) == run_bytes(ranks[1].trainer->state())) << "the replicas differ";
}
