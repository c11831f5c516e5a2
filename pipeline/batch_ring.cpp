#include "pipeline/batch_ring.h"

#include <string>

#include "core/error.h"
#include "profile/zone.h"

namespace tandem::pipeline {

BatchRing::BatchRing(int buffers, int slots_per_batch) : slots_(slots_per_batch), buffers_(size_t(buffers)) {
  check(buffers >= 1 && slots_per_batch >= 1, "batch ring needs at least one buffer of one slot");
}

BatchRing::Claim BatchRing::claim() {
  std::unique_lock<std::mutex> lock(mutex_);
  check(!finished_, "batch ring: claim after finish");
  wait_to_claim(lock, 1);
  return claim_locked();
}

std::optional<BatchRing::Claim> BatchRing::claim_for(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  check(!finished_, "batch ring: claim after finish");
  if (!can_claim(1)) {
    if (wait.count() <= 0) return std::nullopt;
    TANDEM_ZONE_CAT("batch slot wait", "wait.queue");
    if (!changed_.wait_for(lock, wait, [&] { return can_claim(1); })) return std::nullopt;
  }
  return claim_locked();
}

std::vector<BatchRing::Claim> BatchRing::claim(int n) {
  check(n >= 1 && n <= slots_, "batch ring: a claim of " + std::to_string(n) + " slots in batches of " +
                                   std::to_string(slots_));
  std::unique_lock<std::mutex> lock(mutex_);
  check(!finished_, "batch ring: claim after finish");
  wait_to_claim(lock, n);
  std::vector<Claim> claims;
  for (int i = 0; i < n; ++i) claims.push_back(claim_locked());
  return claims;
}

void BatchRing::wait_to_claim(std::unique_lock<std::mutex>& lock, int n) {
  if (can_claim(n)) return;
  TANDEM_ZONE_CAT("batch slot wait", "wait.queue");  // every buffer claimed or in flight
  changed_.wait(lock, [&] { return can_claim(n); });
}

bool BatchRing::can_claim(int n) const {
  if (filling_ >= 0 && slots_ - buffers_[size_t(filling_)].claimed >= n) return true;
  // n <= slots_: a fresh buffer holds what the filling one lacks.
  for (const Buffer& b : buffers_)
    if (b.state == State::free) return true;
  return false;
}

BatchRing::Claim BatchRing::claim_locked() {
  if (filling_ < 0) {
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (buffers_[i].state == State::free) {
        buffers_[i] = Buffer{State::filling, 0, 0, false, {}, next_order_++};
        filling_ = int(i);
        break;
      }
  }
  Buffer& b = buffers_[size_t(filling_)];
  Claim c{filling_, b.claimed++};
  b.last_claim = std::chrono::steady_clock::now();
  if (b.claimed == slots_) close(b);
  return c;
}

void BatchRing::close(Buffer& b) {
  b.closed = true;
  if (filling_ >= 0 && &buffers_[size_t(filling_)] == &b) filling_ = -1;
  if (b.committed == b.claimed) b.state = State::ready;
  changed_.notify_all();
}

void BatchRing::commit(const Claim& c) {
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer& b = buffers_.at(size_t(c.buffer));
  ++b.committed;
  if (b.closed && b.committed == b.claimed) b.state = State::ready;
  changed_.notify_all();
}

std::optional<BatchRing::Batch> BatchRing::due(std::chrono::milliseconds stall) {
  // Oldest ready batch first, so images leave in about the order they came.
  Buffer* best = nullptr;
  for (Buffer& b : buffers_)
    if (b.state == State::ready && (!best || b.order < best->order)) best = &b;
  if (!best && filling_ >= 0) {
    Buffer& f = buffers_[size_t(filling_)];
    bool stalled = std::chrono::steady_clock::now() - f.last_claim >= stall;
    if (f.claimed > 0 && f.committed == f.claimed && (finished_ || stalled)) {
      close(f);
      best = &f;
    }
  }
  if (!best) return std::nullopt;
  best->state = State::running;
  return Batch{int(best - buffers_.data()), best->claimed};
}

std::optional<BatchRing::Batch> BatchRing::take(std::chrono::milliseconds stall) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (auto b = due(stall)) return b;
    bool drained = finished_ && (filling_ < 0 || buffers_[size_t(filling_)].claimed == 0);
    for (const Buffer& b : buffers_) drained = drained && (b.state == State::free || b.state == State::running);
    if (drained) {
      if (filling_ >= 0) buffers_[size_t(filling_)].state = State::free, filling_ = -1;
      return std::nullopt;
    }
    // Wake for commits, or in time to flush a stalled partial batch.
    TANDEM_ZONE_CAT("batch wait", "wait.queue");
    changed_.wait_for(lock, stall);
  }
}

void BatchRing::release(int buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer& b = buffers_.at(size_t(buffer));
  check(b.state == State::running, "batch ring: release of a buffer not taken");
  b.state = State::free;
  changed_.notify_all();
}

void BatchRing::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  changed_.notify_all();
}

}  // namespace tandem::pipeline
