#pragma once
// Tasks one thread posts and other threads help with between their own
// work: tag's face stage posts a batch's face-region decodes, and the
// decoder threads take them before their next file. Lending the decoders
// instead of starting threads of its own keeps the cores from being
// oversubscribed: on the H200 host 16 decoders and 16 crop threads on 16
// cores ran the crops at a third of their speed alone.
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace tandem::pipeline {

class SharedTasks {
 public:
  // Runs body(k) for every k in [0, n), on the calling thread and on any
  // thread that calls help() meanwhile; returns when all have run. One
  // caller at a time. body must not throw.
  void run(size_t n, const std::function<void(size_t)>& body) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body, n_ = n, next_ = 0, finished_ = 0;
    }
    while (help()) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    all_done_.wait(lock, [&] { return finished_ == n_; });
    body_ = nullptr;
  }

  // Runs one posted task, if one is waiting; false when none is.
  bool help() {
    size_t k = 0;
    const std::function<void(size_t)>* body = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!body_ || next_ >= n_) return false;
      k = next_++, body = body_;
    }
    (*body)(k);
    std::lock_guard<std::mutex> lock(mutex_);
    if (++finished_ == n_) all_done_.notify_all();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_done_;
  const std::function<void(size_t)>* body_ = nullptr;  // the posted tasks; null: none
  size_t n_ = 0, next_ = 0, finished_ = 0;
};

}  // namespace tandem::pipeline
