#pragma once
// Sums of float buffers across the GPUs of a data-parallel run, through
// NCCL (from the CUDA toolkit), as llm.c and PyTorch's
// DistributedDataParallel do: one process per GPU, the ranks joined by a
// unique id that one of them makes and the launcher's own channel (MPI)
// hands to the others. Each sum runs on a stream of the group's own, after
// the work already enqueued on the GPU's compute stream, and the compute
// stream's later work waits for it: the backward of the earlier layers goes
// on while the last layers' gradients travel, and the host never waits.
// NCCL needs one GPU per rank (two ranks on one GPU are refused by NCCL
// itself). libnccl.so.2 is loaded at first use: where it is missing, the
// rest of tandem runs as ever and a group says why it cannot be made.
#include <cstddef>
#include <memory>
#include <string>

namespace tandem::cuda {

// Whether NCCL can be loaded here; if not, why (`why_not`).
bool nccl_available(std::string* why_not = nullptr);

// A new group's id: made by one rank, passed as bytes to every other.
std::string nccl_unique_id();

class NcclGroup {
 public:
  // Joins the group `id` as `rank` of `ranks` on GPU `device`; returns once
  // every rank has joined. Throws Error naming NCCL's reason.
  NcclGroup(int device, int ranks, int rank, const std::string& id);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  // A started sum: wait() orders the GPU's compute stream after it (the host
  // does not wait); the buffer must not be touched before that.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void wait() = 0;
  };
  // Starts summing `n` floats at device pointer `p` over every rank, in place.
  std::unique_ptr<Pending> sum_async(float* p, size_t n);

  int device() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tandem::cuda
