#pragma once
// At most `width` holders at once, let in in the order they asked.
//
// The server keeps a thread per open connection, but the catalog's reads
// are CPU work: with 32 clients on 2 cores, 32 pages read at once each took
// 16 times its own time, so the costliest pages of the mix set the p99.
// Let in two at a time in arrival order, a page waits for the pages asked
// before it and then runs at full speed: the same throughput, and a wait
// that is the sum of many pages' times rather than a multiple of its own.
#include <condition_variable>
#include <deque>
#include <mutex>

namespace tandem::gallery {

class FifoGate {
 public:
  explicit FifoGate(int width) : width_(width < 1 ? 1 : width) {}
  FifoGate(const FifoGate&) = delete;
  FifoGate& operator=(const FifoGate&) = delete;

  int width() const { return width_; }
  // Passes waiting for their turn now.
  size_t queued() {
    std::lock_guard lock(mu_);
    return waiting_.size();
  }

  // Held for as long as it lives; waits for its turn when made.
  class Pass {
   public:
    explicit Pass(FifoGate& g) : g_(g) {
      std::unique_lock lock(g_.mu_);
      if (g_.inside_ < g_.width_ && g_.waiting_.empty()) {
        ++g_.inside_;
        return;
      }
      // A place of its own in the queue: a leaving pass hands its place to
      // the first waiter alone (waking every waiter at each exit cost more
      // than the reads themselves with 30 waiting on 2 cores).
      g_.waiting_.push_back(this);
      turn_.wait(lock, [&] { return let_in_; });
    }
    ~Pass() {
      std::lock_guard lock(g_.mu_);
      if (g_.waiting_.empty()) {
        --g_.inside_;
        return;
      }
      Pass* next = g_.waiting_.front();
      g_.waiting_.pop_front();
      next->let_in_ = true;  // inside_ unchanged: the place passes on
      next->turn_.notify_one();
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    FifoGate& g_;
    std::condition_variable turn_;
    bool let_in_ = false;
  };

 private:
  const int width_;
  std::mutex mu_;
  int inside_ = 0;
  std::deque<Pass*> waiting_;  // in arrival order
};

}  // namespace tandem::gallery
