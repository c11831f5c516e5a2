#pragma once
// The verdict of `tandem train --profile`: what limited the training loop
// (data loading, the GPU, the host issuing the GPU's work, CPU compute, or a
// run too short for its one-off setup), read from the training thread's time
// split and the trainer's zones, and what to try next.
#include <string>

#include "profile/summary.h"

namespace tandem::train {

// What the advice depends on beyond the profile.
struct TrainRunFacts {
  std::string thread = "main";  // the name of the thread that runs the Trainer
  bool on_gpu = false;          // --device cuda or hetero
  bool low_precision = false;   // fp16 or bf16 already
};

// profile::generic_verdict when the profile has no thread of that name.
std::string train_profile_verdict(const profile::ProfileSummary& s, const TrainRunFacts& facts);

}  // namespace tandem::train
