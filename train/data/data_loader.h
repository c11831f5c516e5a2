#pragma once
// Batches of a Dataset for training: a seeded per-epoch shuffle, samples
// copied (and augmented) into one contiguous f32 [B,C,H,W] tensor with i64
// [B] labels, made ahead of time by CPU worker threads.
//
// Every batch is a pure function of (seed, epoch, batch number): the order
// comes from the epoch's seeded permutation and each sample's augmentation
// from its own seed, so the batches are the same for any worker count, and a
// run resumed at (epoch, batch) sees what an uninterrupted one would.
//
// Workers make one stream of batches across epochs (global batch number
// g = epoch * batches_per_epoch + batch): worker w makes g0 + w, g0 + w + W,
// ... into its own bounded queue (`prefetch` deep), and next() takes them
// from the queues in turn, so they come out in order and at most
// W * prefetch batches wait in memory. The stream runs on past the end of an
// epoch, so the next epoch's first batches are ready while the caller
// evaluates; start_epoch() only restarts the workers when asked for a batch
// other than the one the stream is at.
//
// Sharded (data-parallel training, one loader per rank): every rank draws
// the same epoch permutation and the same global batches of
// batch_size * shards samples; shard r takes its contiguous share of each
// (an even split of a short last batch), so the ranks together see exactly
// what one process with the global batch would, each sample augmented the
// same way. A last batch with fewer samples than shards is dropped, so no
// rank ever gets an empty one.
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "pipeline/bounded_queue.h"
#include "train/data/augment.h"
#include "train/data/dataset.h"

namespace tandem::train {

// The profile's name of each worker thread: "loader-0", "loader-1", ...
inline constexpr const char* kLoaderThreadPrefix = "loader-";

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;  // drop a final batch smaller than batch_size
  uint64_t seed = 0;
  int workers = 2;         // 0: next() makes each batch on the calling thread
  int prefetch = 2;        // batches each worker may have ready ahead
  Augmentation augment;
  int shard = 0, shards = 1;  // this rank's share of every global batch
};

struct Batch {
  Tensor images;  // f32 [B,C,H,W]
  Tensor labels;  // i64 [B]
  int64_t epoch = 0;
  int64_t index = 0;  // batch number within its epoch
  int64_t global_samples = 0;  // the whole batch's samples, over every shard
};

class DataLoader {
 public:
  // `data` must outlive the loader.
  DataLoader(const Dataset& data, const LoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t batches_per_epoch() const;
  // Samples of a whole batch over every shard.
  int64_t global_batch_size() const { return options_.batch_size * options_.shards; }
  // The dataset indices of `epoch` in batch order.
  std::vector<int64_t> order(int64_t epoch) const;
  // Begins `epoch` at batch `first_batch` (a resumed run).
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The epoch's next batch, or nothing after its last. An Error a worker hit
  // (a dataset failure) is rethrown here, at the batch it concerns, and again
  // by every later call until start_epoch() restarts the stream.
  std::optional<Batch> next();

 private:
  struct Made {
    Batch batch;
    std::exception_ptr error;
  };
  using Queue = pipeline::BoundedQueue<Made>;
  // One thread's copy of the order of the epoch it is in.
  struct OrderCache {
    int64_t epoch = -1;
    std::vector<int64_t> order;
  };

  Batch make_batch(int64_t global, OrderCache& cache) const;
  Made make_or_capture(int64_t global, OrderCache& cache) const;
  void work(size_t worker, int64_t first);
  void restart(int64_t first);
  void stop();

  const Dataset& data_;
  LoaderOptions options_;
  bool started_ = false;
  std::exception_ptr failure_;
  int64_t next_ = 0, end_ = 0;  // global batch numbers: the next one, the epoch's end
  int64_t stream_start_ = 0;    // where the running workers began
  OrderCache serial_cache_;     // for workers == 0
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::thread> threads_;
};

}  // namespace tandem::train
