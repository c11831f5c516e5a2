#pragma once
// The split auto-tuner: measures one split layer on the real shapes (its x,
// its kernels) and sets its r (train/split/split_ratio.h's choose_split):
// forward + backward of the whole layer on home at a few r (a GPU's time for
// a small slice is not ~0), on the CPU, and the copies; then the split at the
// chosen r is measured too and kept only when it beats r = 1 by > 3%.
// Timings are wall-clock over a few reps after warm-up, the home device
// synchronized around them.
#include "core/tensor.h"

namespace tandem::train {

class ChannelSplit;

// Measures `split` on input x (on its home), sets its r and its timing.
void tune_split(ChannelSplit& split, const Tensor& x);

// Under QAT, times the CPU side's channels at its current cut on x in float
// and on integers and keeps the faster (ChannelSplit::set_host_integers);
// nothing to do for a layer whose CPU side cannot run on integers.
void choose_cpu_form(ChannelSplit& split, const Tensor& x);

}  // namespace tandem::train
