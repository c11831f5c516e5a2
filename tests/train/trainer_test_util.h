#pragma once
// Small models and data for the training-loop tests.
#include <cmath>
#include <cstring>
#include <memory>

#include "tests/train/grad_check.h"
#include "train/data/subset.h"
#include "train/models/models.h"
#include "train/optim/adamw.h"
#include "train/trainer.h"

namespace tandem::testing {

// The cnn on 1x8x8 images of 4 classes.
inline train::ModelConfig tiny_config(float dropout) { return {1, 8, 8, 4, dropout}; }

// n random images and labels; images [first_nan, first_nan + nan_count) are NaN.
inline std::unique_ptr<train::TensorDataset> random_dataset(int64_t n, uint64_t seed, int64_t first_nan = 0,
                                                            int64_t nan_count = 0) {
  Tensor x = random_tensor({n, 1, 8, 8}, seed, -2, 2);
  std::vector<int64_t> y(static_cast<size_t>(n));
  train::Rng rng(seed + 1);
  for (int64_t& v : y) v = int64_t(rng.next() % 4);
  float* p = x.data<float>();
  for (int64_t i = first_nan * 64; i < (first_nan + nan_count) * 64; ++i) p[i] = NAN;
  return std::make_unique<train::TensorDataset>(x, Tensor::from_vector(y, {n}), 4);
}

inline train::LoaderOptions loader_options(int64_t batch, bool shuffle, int workers, uint64_t seed = 9) {
  train::LoaderOptions o;
  o.batch_size = batch, o.shuffle = shuffle, o.workers = workers, o.seed = seed;
  return o;
}

// Samples [first, first + count) as one batch.
inline train::Batch whole(const train::Dataset& d, int64_t first, int64_t count) {
  train::Batch b{Tensor::empty(DType::f32, {count, 1, 8, 8}), Tensor::empty(DType::i64, {count}), 0, 0};
  for (int64_t i = 0; i < count; ++i)
    b.labels.data<int64_t>()[i] = d.read_into(first + i, b.images.data<float>() + i * 64);
  return b;
}

// The tiny cnn (dropout 0.5), AdamW (decay 1e-2 but for BN and biases) and
// a trainer.
struct TinyRun {
  std::unique_ptr<train::Sequential> model;
  std::unique_ptr<train::AdamW> optimizer;
  std::unique_ptr<train::Trainer> trainer;

  TinyRun(uint64_t init_seed, const train::LrSchedule& s, const train::TrainerOptions& o, double lr = 1e-3) {
    train::Rng rng(init_seed);
    model = train::make_model("cnn", tiny_config(0.5f), rng);
    optimizer = std::make_unique<train::AdamW>(model->parameters(), train::AdamWOptions{.lr = lr});
    trainer = std::make_unique<train::Trainer>(*model, *optimizer, s, o);
  }
};

// Every tensor of a run (parameters, buffers, optimizer slots) as bytes.
inline std::vector<std::string> run_bytes(const train::TrainingState& s) {
  std::vector<std::string> r;
  auto add = [&](const Tensor& t) { r.emplace_back(static_cast<const char*>(t.raw()), t.bytes()); };
  for (const train::Parameter* p : s.params) add(p->value);
  for (const auto& [name, t] : s.buffers) add(t);
  for (const auto& [name, t] : s.optimizer->state().slots) add(t);
  return r;
}

}  // namespace tandem::testing
