#pragma once
// Copies between a GPU and the host that overlap the GPU's compute, for a
// layer split between the two (train/split/device_link.h): each GPU gets a
// second stream for copies; a device -> host copy starts after the work
// enqueued so far on the compute stream (an event) and the host waits for it
// alone; a host -> device copy is waited for by the compute stream (an
// enqueued wait), never by the host. Host buffers come from a pool of pinned
// blocks keyed by size and reused across steps; a block an upload reads is
// handed out again only once that upload has finished.
#include <memory>

#include "core/tensor.h"

namespace tandem::cuda {

// A host tensor in pinned memory (a pooled block, back to the pool when the
// last reference goes).
Tensor pinned_empty(int device, DType dtype, const Shape& shape);

// Whether the host and GPU `device` address each other's memory coherently
// (Grace Hopper, HMM systems: cudaDevAttrPageableMemoryAccessUsesHostPageTables),
// so a split layer may hand a tensor from one side to the other with no copy.
// Integrated GPUs without it (Jetson) still copy: their cudaMalloc memory is
// not the CPU's to read.
bool shares_host_memory(int device);

// A device -> host copy in flight; wait() returns once the host tensor holds
// the values (and rethrows a failure of the copy).
class PendingHostCopy {
 public:
  PendingHostCopy() = default;
  PendingHostCopy(std::shared_ptr<void> event, Tensor host) : event_(std::move(event)), host_(std::move(host)) {}
  const Tensor& wait();

 private:
  std::shared_ptr<void> event_;  // cudaEvent_t, destroyed with the last handle
  Tensor host_;
};

// Starts copying device tensor `src` into a new pinned host tensor on the
// copy stream, after the work enqueued so far on its GPU's compute stream.
PendingHostCopy start_copy_to_host(const Tensor& src);
// Enqueues the copy of host tensor `src` (pinned: pinned_empty) into a new
// tensor on GPU `device`; the compute stream's later work waits for it.
Tensor copy_to_device_async(const Tensor& src, int device);
// Waits for everything enqueued on GPU `device`'s compute stream (timing).
void synchronize(int device);

// An alias of `t`'s memory on `device` (same bytes, no copy), for
// shares_host_memory devices; keeps t's storage alive.
Tensor alias_on(const Tensor& t, Device device);

}  // namespace tandem::cuda
