#pragma once
// Saving and resuming a training run: parameters, buffers (running
// statistics, dropout call counts), optimizer state, loss scaler, random
// generators, the count of skipped steps and the run's position (epoch, batch within it,
// global step, which is also the learning-rate schedule's position). A
// resumed run continues bit-identically to one never stopped.
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "train/optim/loss_scaler.h"
#include "train/optim/optimizer.h"

namespace tandem::train {

// The live objects a save reads and a load writes into.
struct TrainingState {
  ParameterList params;
  Optimizer* optimizer = nullptr;
  LossScaler* scaler = nullptr;  // fp16 runs only
  std::vector<std::pair<std::string, std::mt19937_64*>> rngs;  // dropout and the like
  int64_t epoch = 0;        // epochs finished
  int64_t epoch_batch = 0;  // batches finished in the current epoch
  // Samples of the current epoch finished, over every rank: where a run
  // resumed with another number of ranks (another global batch) goes on.
  // -1: a checkpoint from before it was kept (epoch_batch alone counts).
  int64_t epoch_samples = 0;
  int64_t step = 0;         // optimizer iterations finished (skipped ones too)
  int64_t skipped_steps = 0;  // steps skipped for a non-finite loss or gradient
  NamedTensors buffers;  // share storage with the module's buffers (Module::buffers)
};

// Atomic: `path` holds the previous checkpoint or the whole new one.
void save_checkpoint(const std::string& path, const TrainingState& state);

// Checks everything against `state` first (parameter and optimizer-slot names
// and shapes, optimizer kind, scaler and generator presence) and reports all
// mismatches of a group in one Error naming the file; only then overwrites
// the live objects and the position fields. A scaler saved by an fp16 run is
// ignored when `state` has none.
void load_checkpoint(const std::string& path, TrainingState& state);

}  // namespace tandem::train
