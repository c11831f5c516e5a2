#pragma once
// The ranks of a data-parallel training run and the collectives its loop
// needs. As in llm.c's multi-GPU setup, the launcher people already use
// (mpirun, srun) starts one process per GPU, or per CPU socket, and MPI
// tells each its rank; every rank trains a replica of the model on its
// share of each global batch, and the gradients are summed across ranks
// before the optimizer step, so every replica takes the same step.
// Every rank must call the collectives in the same order.
#include <memory>
#include <span>
#include <string>

#include "core/tensor.h"

namespace tandem::train {

// A collective started and not finished: its tensor must not be touched
// until wait() returns.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's place among the ranks on its machine: which GPU it takes.
  virtual int local_rank() const = 0;
  // Starts summing the f32 elements of `t` over every rank, in place.
  virtual std::unique_ptr<PendingCollective> sum_async(Tensor t) = 0;
  // Sums `values` over every rank, in place (a step's loss and counts).
  virtual void sum(std::span<double> values) = 0;
  // `t` becomes rank `root`'s `t` on every rank.
  virtual void broadcast(Tensor t, int root) = 0;
  // Ends the whole run from this rank after an error, so that no other rank
  // waits forever in a collective; the launcher stops the others and names
  // this rank.
  [[noreturn]] virtual void abort(int code) = 0;
};

// Whether this build has MPI (`--distributed` needs it).
bool built_with_mpi();

// The MPI world this process was started in (one rank when started without
// a launcher). MPI is initialized here and finalized when the returned
// communicator is destroyed; one per process. Throws Error::unsupported in
// a build without MPI.
std::unique_ptr<Communicator> mpi_world();

// One rank and no launcher: every collective leaves its values as they are.
// What tests of a collective's user run without MPI.
std::unique_ptr<Communicator> solo_world();

// Whether GPU gradients can be summed through NCCL here; if not, why.
bool nccl_available(std::string* why_not = nullptr);

// `host`'s ranks, each on its own GPU `device`, with the sums of GPU
// tensors through NCCL on a stream of their own (cuda/nccl_group.h); host
// tensors, the step's metrics and broadcasts still go through `host`, which
// also hands NCCL its id. Every rank calls it (it returns once all have).
// Throws Error::unsupported where NCCL is not available.
std::unique_ptr<Communicator> with_nccl(std::unique_ptr<Communicator> host, int device);

}  // namespace tandem::train
