#pragma once
// The training loop, in llm.c's spirit: one loop a reader can follow.
//
//   for each epoch:
//     for each batch of the training loader:
//       lr = schedule(step); forward; cross-entropy; backward;
//       clip (optional); optimizer step                      -> on_step
//     evaluate on the test loader (eval mode, no tape)
//     checkpoint                                             -> on_epoch
//
// Mixed precision: the forward under an AutocastGuard; with loss scaling
// (fp16), backward starts from the scale, the gradients are unscaled before
// clipping, and an overflow skips the step like a non-finite loss (and
// halves the scale).
// A loss or gradient norm that is NaN or Inf skips the step: no update, the
// batch-norm running statistics and dropout counts put back as they were,
// the skip counted and reported; `max_bad_steps` skips in a row are an Error
// (the run diverged). Checkpoints (train/checkpoint.h) hold everything the
// loop's future depends on, so a run resumed from one ends bit-identical to
// one never stopped. Profiler zones (category "train"): forward, backward,
// optimizer, data wait, evaluate, checkpoint.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/data/data_loader.h"
#include "train/distributed/gradient_sync.h"
#include "train/layers/module.h"
#include "train/optim/loss_scaler.h"
#include "train/optim/lr_schedule.h"
#include "train/optim/optimizer.h"

namespace tandem::train {

struct TrainerOptions {
  int64_t epochs = 1;
  float label_smoothing = 0;   // training loss only; evaluation reports plain cross-entropy
  double clip_grad_norm = 0;   // max global L2 norm; 0: no clipping
  int64_t max_bad_steps = 20;  // non-finite steps in a row before giving up
  std::string checkpoint;      // written after every epoch ("" = none)
  int64_t checkpoint_every = 0;  // also every this many steps (0: at epoch ends only)
  int64_t max_steps = 0;       // stop once `step` reaches this, after a checkpoint (0: no limit)
  DType autocast =
      DType::f32;  // the forward runs under AutocastGuard(autocast) (train/autocast.h)
                   // Dynamic loss scaling (fp16): overflowed steps are skipped and counted.
  std::optional<LossScalerOptions> loss_scaling = std::nullopt;
  // Channels last: on a device whose table takes nhwc activations, each
  // batch enters the model once converted to nhwc (in the autocast dtype
  // where the table keeps 16-bit activations), and the convolutions, batch
  // norms and pools keep it, as PyTorch's channels_last. Ignored elsewhere.
  bool channels_last = false;
  // Data-parallel training (train/distributed): this process is one of
  // comm->size() ranks, each with the same model and its share of every
  // global batch (a sharded DataLoader). Gradients are summed across ranks
  // while backward runs, and the step's loss and accuracy are the global
  // batch's on every rank, so every rank takes the same decisions (skipped
  // steps, loss scale). Rank 0 alone evaluates and writes checkpoints.
  Communicator* communicator = nullptr;
};

struct StepResult {
  double loss = 0;      // the batch's mean training loss (NaN/Inf when skipped)
  int64_t correct = 0;  // samples whose largest logit is their label
  int64_t samples = 0;
  double grad_norm = 0;  // before clipping
  bool skipped = false;
};

struct StepReport {
  int64_t epoch = 0, batch = 0, batches = 0;  // batch: 1-based within the epoch
  int64_t step = 0;                           // global, after this one
  double loss = 0;                            // this batch's
  double epoch_loss = 0, epoch_accuracy = 0;  // running means over the epoch so far
  double seconds = 0;                         // this step, data wait included
  double epoch_seconds = 0;                   // the epoch's steps so far
  double images_per_second = 0;               // over the epoch so far
  double lr = 0;
  int64_t skipped_steps = 0;                  // in the whole run
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
};

struct EpochReport {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0, train_accuracy = 0;  // over the batches this process ran
  std::optional<EvalResult> test;
  double train_seconds = 0, eval_seconds = 0;
  double images_per_second = 0;  // training
  int64_t skipped_steps = 0;     // in the whole run
};

class Trainer {
 public:
  // model, optimizer (over the model's parameters) must outlive the trainer.
  Trainer(Module& model, Optimizer& optimizer, LrSchedule schedule, TrainerOptions options);

  // Loads options.checkpoint: weights, buffers, optimizer, position.
  void resume();
  // From the current position to options.epochs (or max_steps); returns the
  // epochs finished by this call.
  std::vector<EpochReport> fit(DataLoader& train, DataLoader* test);
  // One optimization step on `batch` (training mode).
  StepResult train_step(const Batch& batch);
  // Loss and accuracy over one pass of `data` (as epoch `epoch`), eval mode,
  // on this process's loader alone.
  EvalResult evaluate(DataLoader& data, int64_t epoch);
  const TrainingState& state() const { return state_; }

  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;

 private:
  // Copies the buffers (batch norm's running statistics) into tensors kept
  // from step to step, so a skipped step can put them back; skip() does.
  void back_up_buffers();
  StepResult skip(StepResult r);
  void save();
  // dL/dloss for backward: the loss scale, where the model is.
  Tensor loss_seed(float scale) const;
  // A batch's images on the model's device, as its first layer reads them.
  Var model_input(const Tensor& images) const;
  bool stop_requested() const { return options_.max_steps > 0 && state_.step >= options_.max_steps; }
  // Rank 0, or the only process: the one that evaluates and checkpoints.
  bool leads() const { return !options_.communicator || options_.communicator->rank() == 0; }
  // Sums the step's loss, correct count and samples over the ranks.
  void global_metrics(StepResult& r) const;
  // The batch of the epoch to begin at: where the checkpoint's samples end,
  // in batches of this run's global batch.
  int64_t first_batch(const DataLoader& train) const;

  Module& model_;
  Device device_;  // where batches go: the model's
  Optimizer& optimizer_;
  std::optional<LossScaler> scaler_;
  LrSchedule schedule_;
  TrainerOptions options_;
  TrainingState state_;
  int64_t bad_in_a_row_ = 0;
  std::vector<Tensor> buffers_before_;  // this step's back_up_buffers(), where the buffers live
  std::unique_ptr<GradientSync> sync_;  // data-parallel runs only
};

// Samples of logits [N, K] whose largest value (the first, on ties) is at
// their label (labels i64 [N]); host tensors.
int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace tandem::train
