#pragma once
// The first training steps of tandem and PyTorch side by side
// (tests/train/trainer_torch.py), on the CPU or a GPU: the small Fashion-MNIST cnn
// (dropout 0, so no mask to match) from the same initial weights on the same
// 20 Fashion-MNIST batches of 32, in the same order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "tests/numpy_ref.h"
#include "tests/train/trainer_test_util.h"
#include "train/data/fashion_mnist.h"
#include "train/optim/sgd.h"

namespace tandem::testing {

using namespace tandem::train;

inline constexpr int64_t kSteps = 20, kBatch = 32;
inline constexpr uint64_t kInitSeed = 17;

inline std::vector<Batch> first_batches(const Dataset& data) {
  DataLoader loader(data, loader_options(kBatch, false, 0));
  loader.start_epoch(0);
  std::vector<Batch> r;
  for (int64_t i = 0; i < kSteps; ++i) r.push_back(*loader.next());
  return r;
}

inline void write_inputs(const std::string& dir, const std::vector<Batch>& batches) {
  Tensor x = Tensor::empty(DType::f32, {kSteps * kBatch, 1, 28, 28});
  Tensor y = Tensor::empty(DType::i64, {kSteps * kBatch});
  for (int64_t i = 0; i < kSteps; ++i) {
    std::memcpy(x.data<float>() + i * kBatch * 784, batches[size_t(i)].images.raw(), batches[size_t(i)].images.bytes());
    std::memcpy(y.data<int64_t>() + i * kBatch, batches[size_t(i)].labels.raw(), batches[size_t(i)].labels.bytes());
  }
  write_npy(dir + "/x.npy", x);
  write_npy(dir + "/y.npy", y);
  Rng rng(kInitSeed);
  for (const auto& [name, t] : make_model("cnn", ModelConfig{.dropout = 0}, rng)->state_dict())
    write_npy(dir + "/" + name + ".npy", t);
}

inline std::vector<double> tandem_losses(const std::vector<Batch>& batches, bool adam, Device device) {
  Rng rng(kInitSeed);
  auto model = make_model("cnn", ModelConfig{.dropout = 0}, rng);
  model->to(device);
  std::unique_ptr<Optimizer> opt;
  if (adam) opt = std::make_unique<AdamW>(model->parameters(), AdamWOptions{.lr = 1e-3, .weight_decay = 0});
  else opt = std::make_unique<Sgd>(model->parameters(), SgdOptions{.lr = 0.01, .momentum = 0.9});
  Trainer t(*model, *opt, LrSchedule::constant(opt->lr()), TrainerOptions{});
  std::vector<double> losses;
  for (const Batch& b : batches) losses.push_back(t.train_step(b).loss);
  return losses;
}

// SGD (lr 0.01, momentum 0.9): losses within 1e-4 relative of PyTorch's.
// Adam (lr 1e-3): within 1e-4 relative plus twice the distance between
// PyTorch's own float32 and float64 runs at that step (see
// test_trainer_torch.cpp). Skips without torch under `python` or without
// Fashion-MNIST.
inline void expect_first_losses_match(Device device, const std::string& python) {
  std::unique_ptr<FashionMnist> data;
  try {
    data = std::make_unique<FashionMnist>(FashionMnist::load(Split::train));
  } catch (const Error& e) {
    GTEST_SKIP() << "Fashion-MNIST missing: " << e.what();
  }
  std::vector<Batch> batches = first_batches(*data);
  std::string dir = make_temp_dir();
  write_inputs(dir, batches);
  std::string args = dir + " " + std::to_string(kSteps) + " " + std::to_string(kBatch) + " " +
                     (device.is_cpu() ? "cpu" : "cuda");
  if (!run_reference_script("train/trainer_torch.py", args, python)) GTEST_SKIP() << "torch missing";
  for (bool adam : {true, false}) {
    std::string name = adam ? "adam" : "sgd";
    Tensor want = read_npy(dir + "/losses_" + name + ".npy", DType::f64);
    Tensor exact = read_npy(dir + "/losses64_" + name + ".npy", DType::f64);
    std::vector<double> got = tandem_losses(batches, adam, device);
    ASSERT_EQ(want.numel(), kSteps);
    for (int64_t s = 0; s < kSteps; ++s) {
      double drift = adam ? 2 * std::fabs(want.scalar_at(s) - exact.scalar_at(s)) : 0;
      EXPECT_NEAR(got[size_t(s)], want.scalar_at(s), 1e-4 * std::fabs(want.scalar_at(s)) + drift)
          << name << " step " << s + 1;
    }
    EXPECT_LT(got.back(), got.front()) << name << ": the loss falls";
  }
  (void)std::system(("rm -rf " + dir).c_str());
}

}  // namespace tandem::testing
