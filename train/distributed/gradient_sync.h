#pragma once
// Data-parallel gradients: after every rank's backward, each parameter's
// gradient is that of the global batch's mean loss, the same on every rank.
// A rank's backward gives the gradient of its own samples' mean loss; times
// its share of the global batch (its samples / all samples) and summed over
// the ranks, that is the global one, also when a short last batch splits
// unevenly.
//
// The sums overlap the backward, as PyTorch's DistributedDataParallel and
// llm.c do: parameters are grouped into buckets of about kBucketBytes in
// the order backward completes them (the last layers first), and a bucket's
// sum starts as soon as backward has finished all of its gradients, while
// the earlier layers' backward still runs. finish() waits for the sums and
// writes them back into the gradients.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "train/distributed/communicator.h"
#include "train/parameter.h"

namespace tandem::train {

class GradientSync {
 public:
  static constexpr int64_t kBucketBytes = int64_t(25) << 20;  // DistributedDataParallel's default

  // `comm` and the parameters must outlive the sync. Parameters on
  // different devices never share a bucket.
  GradientSync(Communicator& comm, const ParameterList& params, int64_t bucket_bytes = kBucketBytes);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Before a backward: this rank's share of the global batch.
  void begin(double share);
  // From backward's hook: `grad` (a parameter's gradient tensor) is complete.
  // Other tensors (an input's gradient) are ignored.
  void gradient_ready(const Tensor& grad);
  // After the backward: starts the buckets backward did not complete (their
  // parameters took no part in this step; their zero gradients still count),
  // waits for every sum and writes it into the gradients.
  void finish();

  int64_t buckets() const { return int64_t(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<size_t> members;  // indexes into params_
    Tensor flat;                  // f32, on the members' device
    size_t ready = 0;
    std::unique_ptr<PendingCollective> pending;
  };
  void launch(Bucket& b);

  Communicator& comm_;
  ParameterList params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;     // per parameter
  std::vector<int64_t> offset_of_;    // per parameter: elements into its bucket
  std::vector<bool> done_;            // per parameter, this step
  std::unordered_map<const void*, size_t> index_of_;  // gradient storage -> parameter
  size_t next_launch_ = 0;  // buckets start in order on every rank
  double share_ = 1;
  bool in_step_ = false;
};

}  // namespace tandem::train
