#pragma once
// A progress line for long runs: on a terminal a bar redrawn in place
// (done/total, images/s, ETA) a few times a second; otherwise (a log, a pipe)
// one plain line every 10 seconds. Reads the tagger's atomic counters from
// its own thread; stop() (or the destructor) ends it with a newline.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "pipeline/tagger.h"

namespace tandem::cli {

class ProgressPrinter {
 public:
  // The sum of the taggers' counters (one tagger per GPU).
  explicit ProgressPrinter(std::vector<const pipeline::TagProgress*> parts);
  ~ProgressPrinter() { stop(); }
  void stop();

 private:
  void loop();
  void print(bool final);

  std::vector<const pipeline::TagProgress*> parts_;
  const bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tandem::cli
