#pragma once
// `tandem train`'s output: a progress bar per epoch (batch, running loss and
// accuracy, img/s, ETA) redrawn in place on a terminal at most 4 times a
// second, or a plain line every 10 s into a log or pipe; one summary line per
// epoch (train and test loss/accuracy, times).
#include <chrono>
#include <cstdint>
#include <string>

#include "train/trainer.h"

namespace tandem::cli {

class TrainProgress {
 public:
  // precision: shown in every line ("bf16"), unless fp32.
  explicit TrainProgress(int64_t epochs, std::string precision = "fp32");
  void step(const train::StepReport& r);
  void epoch(const train::EpochReport& r);

 private:
  void draw(const train::StepReport& r);

  int64_t epochs_;
  std::string tag_;  // " [bf16]", or empty for fp32
  bool tty_;
  bool drawn_ = false;  // a bar is on the current line
  std::chrono::steady_clock::time_point last_;
};

}  // namespace tandem::cli
