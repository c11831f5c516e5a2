#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "profile/zone.h"
#include "train/autocast.h"
#include "train/backend.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train/optim/clip_grad.h"
#include "train/split/device_link.h"

namespace tandem::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::optional<Batch> next_batch(DataLoader& loader) {
  TANDEM_ZONE_CAT("data wait", "train");
  return loader.next();
}

// Host labels are checked here, so that a GPU's cross-entropy need not wait
// for its stream to read its own check back (device labels: it does).
bool checked_on_host(const Tensor& labels, const Var& logits) {
  if (!labels.device().is_cpu()) return false;
  check_labels(labels, logits.shape()[1]);
  return true;
}

// Sums over the batches of one epoch.
struct EpochMeter {
  double loss_sum = 0;  // sum of per-sample losses of the steps not skipped
  int64_t correct = 0, samples = 0, counted = 0;
  double seconds = 0;

  void add(const StepResult& r, double step_seconds) {
    samples += r.samples;
    seconds += step_seconds;
    if (r.skipped) return;
    loss_sum += r.loss * double(r.samples);
    correct += r.correct;
    counted += r.samples;
  }
  double loss() const { return counted ? loss_sum / double(counted) : 0; }
  double accuracy() const { return counted ? double(correct) / double(counted) : 0; }
  double rate() const { return seconds > 0 ? double(samples) / seconds : 0; }
};

// Where the model computes: its parameters' device (all on one; a split
// layer's CPU share is the layer's business).
Device model_device(Module& model) {
  for (Parameter* p : model.parameters())
    if (!p->value.device().is_cpu()) return p->value.device();
  return Device::cpu();
}

NamedTensors named_buffers(Module& model) {
  NamedTensors r;
  for (Buffer* b : model.buffers()) r.emplace_back(b->name, b->value);
  return r;
}

}  // namespace

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  check(logits.rank() == 2 && labels.rank() == 1 && labels.dim(0) == logits.dim(0),
        "accuracy needs logits [N, K] and labels [N], got " + logits.desc().str() + " and " + labels.desc().str());
  check_supported(logits.device().is_cpu() && labels.device().is_cpu(), "accuracy of device tensors");
  const int64_t n = logits.dim(0), k = logits.dim(1);
  const float* x = logits.data<float>();
  const int64_t* y = labels.data<int64_t>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x + i * k;
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == y[i];
  }
  return correct;
}

Trainer::Trainer(Module& model, Optimizer& optimizer, LrSchedule schedule, TrainerOptions options)
    : model_(model), optimizer_(optimizer), schedule_(std::move(schedule)), options_(std::move(options)) {
  check(options_.epochs >= 0 && options_.max_bad_steps > 0 && options_.clip_grad_norm >= 0 &&
            options_.checkpoint_every >= 0 && options_.max_steps >= 0,
        "trainer options: epochs, clip norm, checkpoint interval and step limit must be >= 0, bad-step limit > 0");
  check(options_.checkpoint_every == 0 || !options_.checkpoint.empty(),
        "a checkpoint interval needs a checkpoint file");
  state_.params = optimizer_.parameters();
  state_.buffers = named_buffers(model_);
  state_.optimizer = &optimizer_;
  if (options_.loss_scaling) state_.scaler = &scaler_.emplace(*options_.loss_scaling);
  device_ = model_device(model_);
  if (options_.communicator) sync_ = std::make_unique<GradientSync>(*options_.communicator, state_.params);
}

void Trainer::resume() {
  check(!options_.checkpoint.empty(), "resuming needs a checkpoint file");
  load_checkpoint(options_.checkpoint, state_);
}

void Trainer::save() {
  if (options_.checkpoint.empty() || !leads()) return;
  TANDEM_ZONE_CAT("checkpoint", "train");
  save_checkpoint(options_.checkpoint, state_);
}

void Trainer::back_up_buffers() {
  // Allocated once, where each buffer lives (a GPU's stay there: no round
  // trip): per step, a copy each and no allocation.
  buffers_before_.resize(state_.buffers.size());
  for (size_t i = 0; i < state_.buffers.size(); ++i) {
    const Tensor& t = state_.buffers[i].second;
    Tensor& b = buffers_before_[i];
    if (!b.defined() || !(b.desc() == t.desc()) || b.device() != t.device())
      b = zeros_on(t.device(), t.dtype(), t.shape());
    copy_tensor(b, t);
  }
}

StepResult Trainer::skip(StepResult r) {
  for (size_t i = 0; i < buffers_before_.size(); ++i)
    copy_tensor(state_.buffers[i].second, buffers_before_[i]);
  r.skipped = true;
  ++state_.skipped_steps;
  ++state_.step;
  if (++bad_in_a_row_ >= options_.max_bad_steps)
    throw Error("training diverged: the loss or gradient norm was NaN or Inf for " + std::to_string(bad_in_a_row_) +
                " steps in a row (up to step " + std::to_string(state_.step) + ", epoch " +
                std::to_string(state_.epoch + 1) + "); try a lower --lr or --clip-grad");
  return r;
}

Tensor Trainer::loss_seed(float scale) const {
  Tensor s = Tensor::empty(DType::f32, {});
  s.data<float>()[0] = scale;
  return to_device(s, device_);
}

Var Trainer::model_input(const Tensor& images) const {
  Var x(to_device(images, device_));
  if (!options_.channels_last || images.rank() != 4) return x;
  const TrainBackend& be = train_backend(device_);
  if (!be.takes_nhwc_activations) return x;
  const DType dtype = be.keeps_16bit_activations ? options_.autocast : DType::f32;
  return convert(x, dtype, Layout::nhwc);
}

StepResult Trainer::train_step(const Batch& batch) {
  optimizer_.set_lr(schedule_.at(state_.step));
  back_up_buffers();
  StepResult r;
  r.samples = batch.labels.numel();
  optimizer_.zero_grad();
  Var loss, logits;
  {
    TANDEM_ZONE_CAT("forward", "train");
    AutocastGuard autocast(options_.autocast);
    logits = model_(model_input(batch.images));
    loss = cross_entropy(logits, to_device(batch.labels, device_), options_.label_smoothing,
                         checked_on_host(batch.labels, logits));
  }
  // The loss and the logits start for the host now (a GPU copies them on its
  // copy stream while the backward runs), so the step's one wait below finds
  // them there: read after it, they left the GPU idle for ~0.6 ms of each
  // ResNet-18 step on an H200.
  const DeviceLink link(device_);
  const std::unique_ptr<HostCopy> loss_copy = link.to_host(loss.value()),
                                  logits_copy = link.to_host(logits.value());
  {
    TANDEM_ZONE_CAT("backward", "train");
    const Tensor seed = scaler_ ? loss_seed(scaler_->scale()) : Tensor();
    if (sync_) {
      // This rank's gradient is of its samples' mean loss: weighted by its
      // share of the global batch, the ranks' sum is the global batch's.
      sync_->begin(batch.global_samples > 0 ? double(r.samples) / double(batch.global_samples) : 1.0);
      backward(loss, seed, [this](const Tensor& g) { sync_->gradient_ready(g); });
      sync_->finish();
    } else {
      backward(loss, seed);
    }
  }
  if (scaler_) scaler_->unscale(optimizer_.parameters());  // an overflow makes the norm below inf
  double max_norm = options_.clip_grad_norm > 0 ? options_.clip_grad_norm : std::numeric_limits<double>::infinity();
  // The host reads the gradient norm, then the loss and the logits: on a GPU
  // one wait for the stream per step, after the backward (a non-finite loss
  // still skips the step; its backward was enqueued for nothing).
  ClipResult clip;
  {
    TANDEM_ZONE_CAT("gradient norm", "train");
    clip = clip_grad_norm(optimizer_.parameters(), max_norm);
  }
  r.grad_norm = clip.total_norm;
  r.loss = loss_copy->wait().scalar_at(0);
  r.correct = count_correct(logits_copy->wait(), to_host(batch.labels));
  if (options_.communicator) global_metrics(r);
  if (!std::isfinite(r.loss)) return skip(r);
  if (!clip.finite) {
    if (scaler_) scaler_->step(optimizer_), scaler_->update();  // counts the overflow, backs the scale off
    return skip(r);
  }
  {
    TANDEM_ZONE_CAT("optimizer", "train");
    if (scaler_) scaler_->step(optimizer_), scaler_->update();
    else optimizer_.step();
  }
  ++state_.step;
  bad_in_a_row_ = 0;
  return r;
}

void Trainer::global_metrics(StepResult& r) const {
  double m[3] = {r.loss * double(r.samples), double(r.correct), double(r.samples)};
  options_.communicator->sum(m);
  r.loss = m[0] / m[2];  // a rank's NaN makes every rank's NaN: all skip the step
  r.correct = int64_t(m[1]);
  r.samples = int64_t(m[2]);
}

int64_t Trainer::first_batch(const DataLoader& train) const {
  if (state_.epoch_samples < 0) return state_.epoch_batch;  // a checkpoint without the count
  // Another global batch than the checkpoint's (another number of ranks):
  // the batch holding the next sample; the samples of it already seen are
  // seen again.
  return std::min(state_.epoch_samples / train.global_batch_size(), train.batches_per_epoch());
}

EvalResult Trainer::evaluate(DataLoader& data, int64_t epoch) {
  TANDEM_ZONE_CAT("evaluate", "train");
  NoGradGuard no_grad;
  AutocastGuard autocast(options_.autocast);  // the model is evaluated as it trains
  const bool was_training = model_.training();
  model_.eval();
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  data.start_epoch(epoch);
  while (std::optional<Batch> b = next_batch(data)) {
    Var logits = model_(model_input(b->images));
    Var loss = cross_entropy(logits, to_device(b->labels, device_), 0, checked_on_host(b->labels, logits));
    loss_sum += to_host(loss.value()).scalar_at(0) * double(b->labels.numel());
    correct += count_correct(to_host(logits.value()), to_host(b->labels));
    r.samples += b->labels.numel();
  }
  model_.train(was_training);
  if (r.samples) r.loss = loss_sum / double(r.samples), r.accuracy = double(correct) / double(r.samples);
  return r;
}

std::vector<EpochReport> Trainer::fit(DataLoader& train, DataLoader* test) {
  std::vector<EpochReport> reports;
  model_.train();
  for (int64_t epoch = state_.epoch; epoch < options_.epochs && !stop_requested(); ++epoch) {
    EpochMeter meter;
    state_.epoch_batch = first_batch(train);
    state_.epoch_samples = state_.epoch_batch * train.global_batch_size();
    train.start_epoch(epoch, state_.epoch_batch);
    Clock::time_point t = Clock::now();
    while (std::optional<Batch> batch = next_batch(train)) {
      StepResult r = train_step(*batch);
      ++state_.epoch_batch;
      state_.epoch_samples += batch->global_samples;
      const double dt = seconds_since(t);  // data wait and step
      meter.add(r, dt);
      if (on_step)
        on_step({epoch, state_.epoch_batch, train.batches_per_epoch(), state_.step, r.loss, meter.loss(),
                 meter.accuracy(), dt, meter.seconds, meter.rate(), optimizer_.lr(), state_.skipped_steps});
      if (options_.checkpoint_every && state_.step % options_.checkpoint_every == 0) save();
      if (stop_requested()) break;
      t = Clock::now();
    }
    if (stop_requested() && state_.epoch_batch < train.batches_per_epoch()) {
      save();  // mid-epoch: no evaluation, the resumed run finishes this epoch
      break;
    }
    EpochReport report{epoch, meter.loss(), meter.accuracy(), std::nullopt, meter.seconds, 0, meter.rate(),
                       state_.skipped_steps};
    Clock::time_point e = Clock::now();
    if (test && leads()) report.test = evaluate(*test, epoch);
    report.eval_seconds = seconds_since(e);
    ++state_.epoch;
    state_.epoch_batch = 0;
    state_.epoch_samples = 0;
    save();
    reports.push_back(report);
    if (on_epoch) on_epoch(report);
  }
  return reports;
}

}  // namespace tandem::train
