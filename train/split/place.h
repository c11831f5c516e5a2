#pragma once
// A model trained on a GPU with its conv and linear layers split between the
// GPU and the CPU (`tandem train --device hetero --split auto|R`):
//
//   place_hetero(model, Device::cuda(0), parse_split_setting("auto"));  // or "0.25": a quarter on the CPU
//   prepare_split(model, sample_batch);        // tunes r per layer (auto)
//   auto opt = make_optimizer(model.parameters());   // after: slices are parameters
//   ... train ...
//   fmt::print("{}", format_split_summary(split_summary(model)));
//
// Every other layer (BN, activations, pools, the loss) runs on the GPU, where
// the activations live. state_dict(), checkpoints and export keep the whole
// tensors under their PyTorch names.
#include <string>
#include <vector>

#include "train/layers/module.h"
#include "train/split/split_ratio.h"

namespace tandem::train {

// Moves the model to `home` and splits every Conv2d and Linear in it:
// share s.ratio of each layer's output channels on home (fixed), or all on
// home until prepare_split tunes it (auto). A grouped conv splits only whole
// (r rounds to 0 or 1). Returns the number of layers split.
int place_hetero(Module& model, Device home, const SplitSetting& s);

// Runs one eval-mode forward of `batch` (host or home; a training batch's
// shape) so that each auto layer is tuned on its real input, and each layer
// cut at a fixed share under QAT has its CPU side timed in float and on
// integers (the faster kept); training mode is restored. Nothing to do
// without split layers. Call before making the optimizer.
void prepare_split(Module& model, const Tensor& batch);

// Each split layer's output channels on home, in the model's order, and
// their setting (which ends any pending tuning): how the ranks of a
// data-parallel run take rank 0's tuning. Ranks that tuned on their own
// would cut the parameters differently, and their gradient sums would not
// line up.
std::vector<int64_t> split_home_rows(Module& model);
void set_split_home_rows(Module& model, const std::vector<int64_t>& home_rows);

// One split layer, for the end-of-run summary.
struct SplitRow {
  std::string layer;        // the weight's plain name without ".weight"
  std::string input_shape;  // as tuned ("" for a fixed r)
  int64_t channels = 0;     // output channels
  double r = 1;             // share on the GPU
  bool tuned = false;
  double t_gpu = 0, t_cpu = 0, t_split = 0;  // seconds of forward + backward (tuned layers)
  bool cpu_int8 = false;                     // the CPU side's last forward ran on integers (QAT)
};
std::vector<SplitRow> split_summary(Module& model);
// The rows as a text table (times in ms; the CPU's share, 1 - r).
std::string format_split_summary(const std::vector<SplitRow>& rows);

}  // namespace tandem::train
