// The training loop (train/trainer.h): loss falls on a fixed batch; a run
// stopped mid-epoch and resumed from its checkpoint ends with every
// parameter, buffer and optimizer slot bit-identical to a run never stopped;
// evaluation's loss is the per-sample mean whatever the batching; accuracy.
#include <gtest/gtest.h>

#include "tests/numpy_ref.h"
#include "tests/train/trainer_test_util.h"
#include "train/functional.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

// The resume test's schedule: warmup, then cosine decay over the run.
LrSchedule warmup_cosine(int64_t steps) { return LrSchedule::cosine(3e-3, steps - 3, 1e-4).with_warmup(3, 0.1); }

LoaderOptions loader(bool shuffle, int workers) { return loader_options(16, shuffle, workers); }

}  // namespace

TEST(Trainer, LossFallsOnAFixedBatch) {
  auto data = random_dataset(16, 1);
  Batch b = whole(*data, 0, 16);
  Rng rng(2);
  auto model = make_model("cnn", tiny_config(0), rng);
  AdamW opt(model->parameters(), AdamWOptions{.lr = 1e-2, .weight_decay = 0});
  Trainer t(*model, opt, LrSchedule::constant(1e-2), TrainerOptions{});
  double first = t.train_step(b).loss, last = first;
  for (int i = 0; i < 30; ++i) last = t.train_step(b).loss;
  EXPECT_NEAR(first, std::log(4.0), 0.5);  // about uniform at the start
  EXPECT_LT(last, first / 4);
  EXPECT_EQ(t.state().step, 31);
}

TEST(Trainer, ResumedMidEpochEndsBitIdentical) {
  auto train_data = random_dataset(80, 3);  // 5 batches of 16 per epoch
  auto test_data = random_dataset(24, 4);
  std::string dir = make_temp_dir();
  TrainerOptions o{.epochs = 3, .label_smoothing = 0.1f, .clip_grad_norm = 1.0, .checkpoint = dir + "/a.ckpt"};

  TinyRun a(7, warmup_cosine(15), o, 3e-3);
  DataLoader a_train(*train_data, loader(true, 2)), a_test(*test_data, loader(false, 1));
  std::vector<EpochReport> a_epochs = a.trainer->fit(a_train, &a_test);
  ASSERT_EQ(a_epochs.size(), 3u);

  o.checkpoint = dir + "/b.ckpt";
  o.max_steps = 7;  // stops in epoch 2, after its batch 2
  {
    TinyRun b(7, warmup_cosine(15), o, 3e-3);
    DataLoader b_train(*train_data, loader(true, 2)), b_test(*test_data, loader(false, 1));
    EXPECT_EQ(b.trainer->fit(b_train, &b_test).size(), 1u);
    EXPECT_EQ(b.trainer->state().step, 7);
  }
  o.max_steps = 0;
  // Other initial weights: the checkpoint must replace them all.
  TinyRun c(12345, warmup_cosine(15), o, 3e-3);
  c.trainer->resume();
  EXPECT_EQ(c.trainer->state().epoch, 1);
  EXPECT_EQ(c.trainer->state().epoch_batch, 2);
  DataLoader c_train(*train_data, loader(true, 0)), c_test(*test_data, loader(false, 0));  // workers don't matter
  std::vector<EpochReport> c_epochs = c.trainer->fit(c_train, &c_test);
  ASSERT_EQ(c_epochs.size(), 2u);
  EXPECT_EQ(c.trainer->state().step, 15);
  EXPECT_EQ(run_bytes(c.trainer->state()), run_bytes(a.trainer->state()));
  EXPECT_EQ(c_epochs.back().test->loss, a_epochs.back().test->loss);
  (void)std::system(("rm -rf " + dir).c_str());
}

TEST(Trainer, EvaluationIsThePerSampleMean) {
  auto data = random_dataset(23, 5);
  Rng rng(6);
  auto model = make_model("cnn", tiny_config(0.5f), rng);
  AdamW opt(model->parameters(), AdamWOptions{});
  Trainer t(*model, opt, LrSchedule::constant(1e-3), TrainerOptions{});
  DataLoader batches_of_16(*data, loader(false, 0));  // 16 + 7
  EvalResult r = t.evaluate(batches_of_16, 0);
  EXPECT_TRUE(model->training());  // restored

  model->eval();
  Batch all = whole(*data, 0, 23);
  Var logits = (*model)(Var(all.images));
  EXPECT_EQ(r.samples, 23);
  EXPECT_NEAR(r.loss, cross_entropy(logits, all.labels).value().scalar_at(0), 1e-6);
  EXPECT_EQ(r.accuracy, double(count_correct(logits.value(), all.labels)) / 23);
}

TEST(Trainer, CountCorrectTakesTheFirstLargestLogit) {
  Tensor logits = Tensor::from_vector<float>({1, 3, 2, 5, 0, 5, 0, 0, 0}, {3, 3});
  EXPECT_EQ(count_correct(logits, Tensor::from_vector<int64_t>({1, 0, 0}, {3})), 3);
  EXPECT_EQ(count_correct(logits, Tensor::from_vector<int64_t>({2, 2, 1}, {3})), 0);
  EXPECT_THROW(count_correct(logits, Tensor::from_vector<int64_t>({1, 0}, {2})), Error);
}
