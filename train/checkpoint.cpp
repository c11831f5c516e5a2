#include "train/checkpoint.h"

#include <sstream>

#include "train/checkpoint_file.h"
#include "train/device_tensor.h"
#include "train/split/slice_names.h"

namespace tandem::train {

namespace {

const std::string kParam = "param/", kBuffer = "buffer/", kSlot = "optim/", kRng = "rng/";

std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

// A value the file must have; an Error naming the file and key otherwise.
template <typename Map>
const typename Map::mapped_type& required(const Map& map, const std::string& key, const ErrorContext& ctx) {
  auto it = map.find(key);
  check(it != map.end(), "checkpoint has no '" + key + "'", ctx);
  return it->second;
}

int64_t required_count(const CheckpointData& d, const std::string& key, const ErrorContext& ctx) {
  int64_t v = required(d.ints, key, ctx);
  check(v >= 0, "checkpoint '" + key + "' is negative: " + std::to_string(v), ctx);
  return v;
}

// The file's tensors under `prefix`, with the prefix taken off.
NamedTensors with_prefix(const CheckpointData& d, const std::string& prefix) {
  NamedTensors out;
  for (const auto& [name, t] : d.tensors)
    if (name.compare(0, prefix.size(), prefix) == 0) out.emplace_back(name.substr(prefix.size()), t);
  return out;
}

OptimizerState optimizer_state(const CheckpointData& d, const ErrorContext& ctx) {
  return OptimizerState{required(d.texts, "optimizer.kind", ctx), required_count(d, "optimizer.steps", ctx),
                        with_prefix(d, kSlot)};
}

LossScalerState scaler_state(const CheckpointData& d, const ErrorContext& ctx) {
  return LossScalerState{float(required(d.reals, "scaler.scale", ctx)), required_count(d, "scaler.growth_tracker", ctx),
                         required_count(d, "scaler.skipped_steps", ctx)};
}

std::vector<std::mt19937_64> rng_states(const CheckpointData& d, const TrainingState& state, const ErrorContext& ctx) {
  std::vector<std::mt19937_64> out;
  for (const auto& [name, rng] : state.rngs) {
    std::istringstream in(required(d.texts, kRng + name, ctx));
    out.emplace_back();
    in >> out.back();
    check(!in.fail(), "checkpoint holds a malformed state for random generator '" + name + "'", ctx);
  }
  return out;
}

void check_tensor_names(const CheckpointData& d, const ErrorContext& ctx) {
  for (const auto& [name, t] : d.tensors)
    check(name.starts_with(kParam) || name.starts_with(kBuffer) || name.starts_with(kSlot),
          "checkpoint has an unknown tensor '" + name + "'", ctx);
}

NamedTensors live_parameters(const TrainingState& state) {
  NamedTensors out;
  for (const Parameter* p : state.params) out.emplace_back(p->name, p->value);
  return out;
}

// A checkpoint's contents after every check against the live objects.
struct CheckedCheckpoint {
  NamedTensors params, buffers;
  OptimizerState optimizer;
  double lr = 0;
  LossScalerState scaler;
  std::vector<std::mt19937_64> rngs;
  int64_t epoch = 0, epoch_batch = 0, epoch_samples = -1, step = 0, skipped_steps = 0;
};

CheckedCheckpoint checked_against(const CheckpointData& d, const TrainingState& state, const ErrorContext& ctx) {
  check_tensor_names(d, ctx);
  CheckedCheckpoint c;
  // A layer split between devices holds slices; the file holds whole tensors.
  c.params = slice_like(live_parameters(state), with_prefix(d, kParam));
  check_same_tensors(live_parameters(state), c.params, "parameters", ctx);
  c.buffers = with_prefix(d, kBuffer);
  check_same_tensors(state.buffers, c.buffers, "buffers", ctx);
  if (state.optimizer) {
    c.optimizer = optimizer_state(d, ctx);
    c.optimizer.slots = slice_like(state.optimizer->state().slots, c.optimizer.slots);
    state.optimizer->check_state(c.optimizer, ctx);
    c.lr = required(d.reals, "optimizer.lr", ctx);
  }
  if (state.scaler) {
    c.scaler = scaler_state(d, ctx);
    try {
      state.scaler->check_state(c.scaler);
    } catch (const Error& e) {
      throw e.with_context(ctx);
    }
  }
  c.rngs = rng_states(d, state, ctx);
  c.epoch = required_count(d, "epoch", ctx);
  c.epoch_batch = required_count(d, "epoch_batch", ctx);
  if (d.ints.count("epoch_samples")) c.epoch_samples = required_count(d, "epoch_samples", ctx);
  c.step = required_count(d, "step", ctx);
  c.skipped_steps = required_count(d, "skipped_steps", ctx);
  return c;
}

// Writes checked contents into the live objects; cannot fail.
void apply(const CheckedCheckpoint& c, TrainingState& state, const ErrorContext& ctx) {
  copy_by_name(live_parameters(state), c.params, "parameters", ctx);
  copy_by_name(state.buffers, c.buffers, "buffers", ctx);
  if (state.optimizer) {
    state.optimizer->load_state(c.optimizer, ctx);
    state.optimizer->set_lr(c.lr);
  }
  if (state.scaler) state.scaler->load_state(c.scaler);
  for (size_t i = 0; i < c.rngs.size(); ++i) *state.rngs[i].second = c.rngs[i];
  state.epoch = c.epoch;
  state.epoch_batch = c.epoch_batch;
  state.epoch_samples = c.epoch_samples;
  state.step = c.step;
  state.skipped_steps = c.skipped_steps;
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainingState& state) {
  CheckpointData d;
  // The file is written from host copies of what lives on a GPU.
  // Split layers' slices go in whole, so any split (or none) resumes from the file.
  for (const auto& [name, value] : gather_slices(live_parameters(state))) d.tensors.emplace_back(kParam + name, to_host(value));
  for (const auto& [name, value] : state.buffers) d.tensors.emplace_back(kBuffer + name, to_host(value));
  if (state.optimizer) {
    OptimizerState s = state.optimizer->state();
    d.texts["optimizer.kind"] = s.kind;
    d.ints["optimizer.steps"] = s.steps;
    d.reals["optimizer.lr"] = state.optimizer->lr();
    for (const auto& [name, t] : gather_slices(s.slots)) d.tensors.emplace_back(kSlot + name, to_host(t));
  }
  if (state.scaler) {
    d.reals["scaler.scale"] = state.scaler->state().scale;
    d.ints["scaler.growth_tracker"] = state.scaler->state().growth_tracker;
    d.ints["scaler.skipped_steps"] = state.scaler->state().skipped_steps;
  }
  for (const auto& [name, rng] : state.rngs) d.texts[kRng + name] = rng_text(*rng);
  d.ints["epoch"] = state.epoch;
  d.ints["epoch_batch"] = state.epoch_batch;
  d.ints["epoch_samples"] = state.epoch_samples;
  d.ints["step"] = state.step;
  d.ints["skipped_steps"] = state.skipped_steps;
  write_checkpoint_file(path, d);
}

void load_checkpoint(const std::string& path, TrainingState& state) {
  ErrorContext ctx{path, {}, {}, {}};
  apply(checked_against(read_checkpoint_file(path), state, ctx), state, ctx);
}

}  // namespace tandem::train
