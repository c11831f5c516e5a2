#pragma once
// Batches formed on the fly from images that finish decoding in any order.
// A fixed ring of batch buffers (owned by the caller; the ring hands out
// indices): decoder threads claim a slot, fill it in place and commit it;
// the inference thread takes a batch once every slot is committed, or
// earlier when producers have stalled (a partial batch is flushed, not
// waited on forever), and releases the buffer when the device has read it.
// With every buffer claimed or in flight, claim() blocks: back-pressure from
// inference to the decoders, and memory stays bounded.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

namespace tandem::pipeline {

class BatchRing {
 public:
  struct Claim {
    int buffer = -1, slot = -1;
  };
  struct Batch {
    int buffer = -1;
    int count = 0;  // slots 0..count-1 hold images
  };

  BatchRing(int buffers, int slots_per_batch);

  // A free slot; blocks while none is. Every claim must be committed, also
  // when filling it failed (the slot then holds garbage the caller ignores).
  Claim claim();
  // A free slot if one comes within `wait` (zero: only one free now).
  std::optional<Claim> claim_for(std::chrono::milliseconds wait);
  // `n` (1..slots_per_batch) slots at once: what is left of the filling
  // buffer and, when that is short, the next free buffer. Blocks holding
  // none until all n can be had: a caller that held some while waiting for
  // the rest could hold an uncommitted slot in every buffer (several GPU
  // decoders claiming groups at once do), and then no batch could complete.
  std::vector<Claim> claim(int n);
  void commit(const Claim& c);

  // The next batch to run: full, or partial once no slot was claimed for
  // `stall` (or the producers finished). Nothing when finished and drained.
  std::optional<Batch> take(std::chrono::milliseconds stall);
  // The batch's buffer may be filled again.
  void release(int buffer);
  // No more claims will come: what is committed is flushed.
  void finish();

  int slots_per_batch() const { return slots_; }

 private:
  enum class State { free, filling, ready, running };
  struct Buffer {
    State state = State::free;
    int claimed = 0, committed = 0;
    bool closed = false;  // no more claims into it
    std::chrono::steady_clock::time_point last_claim;
    long order = 0;       // sequence number: batches run in the order they filled
  };

  // Whether n slots can be claimed now without waiting; then claim_locked()
  // n times gives them.
  bool can_claim(int n) const;
  // Blocks (under `lock`) until n slots can be claimed; the wait is a zone.
  void wait_to_claim(std::unique_lock<std::mutex>& lock, int n);
  Claim claim_locked();
  // The batch taken next under the lock, if any is due.
  std::optional<Batch> due(std::chrono::milliseconds stall);
  void close(Buffer& b);

  const int slots_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Buffer> buffers_;
  int filling_ = -1;  // buffer taking claims, or -1
  long next_order_ = 0;
  bool finished_ = false;
};

}  // namespace tandem::pipeline
