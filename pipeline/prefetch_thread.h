#pragma once
// One job at a time on a named thread of its own, for a stage that prepares
// its next input while it works on the current one (a GPU JPEG decoder's
// thread reads the next group of files while the engines decode this one):
//
//   PrefetchThread<Group> reader("gpu-reader-0");
//   reader.start([&] { return read_group(n); });  // returns at once
//   ... work ...
//   Group next = reader.take();                   // waits; rethrows the job's exception
//
// The thread starts with the first job and lives until destruction, so a
// profile shows one lane for it, not one per job. The destructor waits for a
// started job, then joins.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/error.h"
#include "profile/zone.h"

namespace tandem::pipeline {

template <typename T>
class PrefetchThread {
 public:
  explicit PrefetchThread(std::string name) : name_(std::move(name)) {}
  ~PrefetchThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  PrefetchThread(const PrefetchThread&) = delete;
  PrefetchThread& operator=(const PrefetchThread&) = delete;

  // Hands `job` to the thread. One job at a time: take() the last one first.
  void start(std::function<T()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      check(!busy_ && !result_ && !error_, "PrefetchThread " + name_ + ": start() before take()");
      job_ = std::move(job);
      busy_ = true;
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    changed_.notify_all();
  }

  // Whether a job was started and not yet taken.
  bool pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return busy_ || result_ || error_;
  }

  // The started job's result, once it is there.
  T take() {
    std::unique_lock<std::mutex> lock(mutex_);
    check(busy_ || result_ || error_, "PrefetchThread " + name_ + ": take() without a started job");
    changed_.wait(lock, [this] { return !busy_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    T r = std::move(*result_);
    result_.reset();
    return r;
  }

 private:
  void loop() {
    TANDEM_THREAD_NAME(name_);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return quit_ || (busy_ && job_); });
      if (busy_ && job_) {
        std::function<T()> job = std::exchange(job_, nullptr);
        lock.unlock();
        std::optional<T> r;
        std::exception_ptr e;
        try {
          r.emplace(job());
        } catch (...) {
          e = std::current_exception();
        }
        lock.lock();
        result_ = std::move(r);
        error_ = e;
        busy_ = false;
        changed_.notify_all();
        continue;
      }
      if (quit_) return;
    }
  }

  std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::function<T()> job_;
  bool busy_ = false, quit_ = false;
  std::optional<T> result_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tandem::pipeline
