#pragma once
// Tasks threads post and other threads help with between their own work:
// tag's face stages post a batch's face-region decodes, and the decoder
// threads take them before their next file. Lending the decoders instead
// of starting threads of its own keeps the cores from being
// oversubscribed: on the H200 host 16 decoders and 16 crop threads on 16
// cores ran the crops at a third of their speed alone.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace tandem::pipeline {

class SharedTasks {
 public:
  // Runs body(k) for every k in [0, n), on the calling thread and on any
  // thread that calls help() meanwhile; returns when all have run. Several
  // threads may post at once (two batches' face stages): helpers take the
  // oldest group's tasks first, and a poster helps only its own, so that
  // it returns as soon as its group is done. body must not throw.
  void run(size_t n, const std::function<void(size_t)>& body) {
    if (n == 0) return;
    Group group{&body, n};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_.push_back(&group);
    }
    while (take(&group)) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    all_done_.wait(lock, [&] { return group.finished == group.n; });
  }

  // Runs one posted task, if one is waiting; false when none is.
  bool help() { return take(nullptr); }

 private:
  struct Group {
    const std::function<void(size_t)>* body;
    size_t n, next = 0, finished = 0;
  };

  // Runs the next task of `only`, or of the oldest group when null.
  bool take(Group* only) {
    Group* g = nullptr;
    size_t k = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      g = only ? only : (open_.empty() ? nullptr : open_.front());
      if (!g || g->next >= g->n) return false;
      k = g->next++;
      // Every task handed out: no helper looks at this group again.
      if (g->next == g->n) open_.erase(std::find(open_.begin(), open_.end(), g));
    }
    (*g->body)(k);
    std::lock_guard<std::mutex> lock(mutex_);
    // The poster may return once this is seen: g is not touched after it.
    if (++g->finished == g->n) all_done_.notify_all();
    return true;
  }

  std::mutex mutex_;
  std::condition_variable all_done_;
  std::deque<Group*> open_;  // groups with tasks not yet handed out, oldest first
};

}  // namespace tandem::pipeline
