// Checkpoints: a resumed run is bit-identical to an uninterrupted one (toy
// quadratic with noise from a checkpointed generator, schedule, clipping,
// loss scaling with overflows); loads check names and shapes and report
// every mismatch with the file; a corrupt or foreign file is an Error.
// The write-while-killed test is in test_checkpoint_atomic.cpp.
#include <gtest/gtest.h>
#include <zlib.h>

#include <functional>
#include <limits>
#include <memory>

#include "formats/file_bytes.h"
#include "tests/temp_dir.h"
#include "tests/train/optim_test_util.h"
#include "train/checkpoint.h"
#include "train/optim/adamw.h"
#include "train/optim/clip_grad.h"
#include "train/optim/lr_schedule.h"
#include "train/optim/sgd.h"

namespace tandem::train {
namespace {

using testing::Quadratic;

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(ParameterList)>;

// One training run on the quadratic that can stop after `stop_at` steps
// (saving a checkpoint) or start from one.
struct ToyRun {
  Quadratic q{21};
  std::unique_ptr<Optimizer> opt;
  LossScaler scaler;
  std::mt19937_64 noise{99};
  LrSchedule schedule = LrSchedule::cosine(0.05, 25, 1e-3).with_warmup(5, 0.2);
  TrainingState state;

  explicit ToyRun(const MakeOptimizer& make) : opt(make(q.list())) {
    state.params = q.list();
    state.optimizer = opt.get();
    state.scaler = &scaler;
    state.rngs = {{"noise", &noise}};
  }

  // Steps until state.step == end; every 9th step's gradients overflow.
  void train_until(int64_t end) {
    for (; state.step < end; ++state.step) {
      q.gradients(0.1f, &noise);
      for (auto& p : q.params)
        for (int64_t k = 0; k < p.grad.numel(); ++k) p.grad.data<float>()[k] *= scaler.scale();
      if (state.step % 9 == 4) q.params[1].grad.data<float>()[0] = std::numeric_limits<float>::infinity();
      opt->set_lr(schedule.at(state.step));
      scaler.unscale(q.list());
      clip_grad_norm(q.list(), 2.0);
      scaler.step(*opt);
      scaler.update();
      opt->zero_grad();
    }
  }
};

void expect_bit_exact_resume(const MakeOptimizer& make, const std::string& what) {
  testing::TempDir dir("ckpt_resume");
  ToyRun straight(make);
  straight.train_until(30);

  {
    ToyRun first(make);
    first.train_until(13);
    save_checkpoint(dir.file("run.ckpt"), first.state);
  }
  ToyRun resumed(make);
  resumed.noise.seed(12345);  // must be overwritten by the checkpoint
  load_checkpoint(dir.file("run.ckpt"), resumed.state);
  EXPECT_EQ(resumed.state.step, 13);
  resumed.train_until(30);

  testing::expect_same(resumed.q.values(), straight.q.values(), what + ": parameters");
  OptimizerState a = resumed.opt->state(), b = straight.opt->state();
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t i = 0; i < a.slots.size(); ++i) testing::expect_same(a.slots[i].second, b.slots[i].second, a.slots[i].first);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(resumed.scaler.state().scale, straight.scaler.state().scale);
  EXPECT_EQ(resumed.scaler.skipped_steps(), straight.scaler.skipped_steps());
  EXPECT_EQ(straight.scaler.skipped_steps(), 3) << "steps 4, 13 and 22 overflow";
  EXPECT_EQ(resumed.noise(), straight.noise());
}

TEST(Checkpoint, ResumedSgdRunIsBitIdenticalToAnUninterruptedOne) {
  expect_bit_exact_resume([](ParameterList p) { return std::make_unique<Sgd>(p, SgdOptions{0.05, 0.9, 0, 1e-3, true}); },
                          "SGD Nesterov");
}

TEST(Checkpoint, ResumedAdamWRunIsBitIdenticalToAnUninterruptedOne) {
  expect_bit_exact_resume([](ParameterList p) { return std::make_unique<AdamW>(p, AdamWOptions{0.05}); }, "AdamW");
}

TEST(Checkpoint, RoundTripKeepsPositionLearningRateAndScaler) {
  testing::TempDir dir("ckpt_roundtrip");
  ToyRun a([](ParameterList p) { return std::make_unique<AdamW>(p, AdamWOptions{}); });
  a.train_until(7);
  a.state.epoch = 2;
  a.state.epoch_batch = 5;
  save_checkpoint(dir.file("a.ckpt"), a.state);
  ToyRun b([](ParameterList p) { return std::make_unique<AdamW>(p, AdamWOptions{}); });
  load_checkpoint(dir.file("a.ckpt"), b.state);
  EXPECT_EQ(b.state.epoch, 2);
  EXPECT_EQ(b.state.epoch_batch, 5);
  EXPECT_EQ(b.state.step, 7);
  EXPECT_EQ(b.opt->lr(), a.opt->lr());
  EXPECT_EQ(b.opt->steps(), a.opt->steps());
  EXPECT_EQ(b.scaler.state().skipped_steps, 1);
  testing::expect_same(b.q.values(), a.q.values(), "parameters");
}

// Expects load_checkpoint to throw an Error whose message names the file and
// contains every one of `parts`; the live parameters must be untouched.
void expect_load_error(const std::string& path, TrainingState& state, const std::vector<std::string>& parts) {
  Tensor before = Quadratic::flat({state.params[0]->value});
  try {
    load_checkpoint(path, state);
    FAIL() << "load succeeded";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "no '" << p << "' in: " << m;
  }
  testing::expect_same(Quadratic::flat({state.params[0]->value}), before, "parameters after a failed load");
}

TEST(Checkpoint, NameAndShapeMismatchesAreAllReportedAndNothingIsLoaded) {
  testing::TempDir dir("ckpt_mismatch");
  ToyRun a([](ParameterList p) { return std::make_unique<Sgd>(p, SgdOptions{0.1, 0.9}); });
  a.train_until(3);
  save_checkpoint(dir.file("a.ckpt"), a.state);

  Quadratic other(5);
  other.params[1].name = "head.bias";  // renamed: missing + unexpected
  other.params[2].value = Tensor::zeros(DType::f32, {3, 2, 2});
  other.params[2].grad = Tensor::zeros(DType::f32, {3, 2, 2});
  TrainingState s;
  s.params = other.list();
  expect_load_error(dir.file("a.ckpt"), s,
                    {"missing 'head.bias'", "unexpected 'layer.bias'", "'conv.weight' is f32[2,3,2], expected f32[3,2,2]"});

  ToyRun adam([](ParameterList p) { return std::make_unique<AdamW>(p, AdamWOptions{}); });
  expect_load_error(dir.file("a.ckpt"), adam.state, {"'sgd'", "'adamw'"});
}

TEST(Checkpoint, CorruptTruncatedForeignAndNewerFilesAreErrors) {
  testing::TempDir dir("ckpt_corrupt");
  ToyRun a([](ParameterList p) { return std::make_unique<Sgd>(p, SgdOptions{0.1}); });
  save_checkpoint(dir.file("a.ckpt"), a.state);
  std::string good = read_file_bytes(dir.file("a.ckpt"), 1 << 20);

  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  expect_load_error(dir.write("flipped.ckpt", flipped), a.state, {"checksum"});
  expect_load_error(dir.write("short.ckpt", good.substr(0, good.size() - 9)), a.state, {"checksum"});
  expect_load_error(dir.write("tiny.ckpt", good.substr(0, 10)), a.state, {"not a tandem checkpoint"});
  expect_load_error(dir.write("foreign.ckpt", "PK\x03\x04" + good), a.state, {"not a tandem checkpoint"});

  // A later format version with a valid checksum: refused as unsupported.
  std::string newer = good.substr(0, good.size() - 4);
  newer[8] = 2;
  uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(newer.data()), uInt(newer.size())));
  newer.append(reinterpret_cast<const char*>(&crc), 4);
  expect_load_error(dir.write("newer.ckpt", newer), a.state, {"version 2"});
}

}  // namespace
}  // namespace tandem::train
