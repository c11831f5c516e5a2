#pragma once
// A blocking FIFO of bounded size between pipeline stages: push waits while
// it is full (back-pressure: a fast stage cannot run ahead and fill memory),
// pop waits while it is empty. close() ends the stream: pushes are refused,
// pops drain what is left and then return nothing.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

#include "profile/zone.h"
#include "profile/zone_names.h"

namespace tandem::pipeline {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // False when the queue was closed (the item is dropped).
  bool push(T item) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto room = [&] { return closed_ || items_.size() < capacity_; };
    if (!room()) {  // the zone only when it blocks: the fast path stays free
      TANDEM_ZONE_CAT(profile::kQueueFullZone, "wait.queue");
      not_full_.wait(lock, room);
    }
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Nothing once the queue is closed and drained.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    auto ready = [&] { return closed_ || !items_.empty(); };
    if (!ready()) {
      TANDEM_ZONE_CAT(profile::kQueueEmptyZone, "wait.queue");
      not_empty_.wait(lock, ready);
    }
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // The first item if there is one now; never waits.
  std::optional<T> try_pop() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace tandem::pipeline
