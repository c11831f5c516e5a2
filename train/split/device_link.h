#pragma once
// The host side's view of a split layer's home device (train/split): the
// copies a layer split between a GPU and the CPU makes, overlapped with the
// GPU's work. GPU work is asynchronous (enqueued on the training table's
// stream) and CPU kernels run on the calling thread, so no thread is needed:
//   start x's copy to the host (after the work enqueued so far), enqueue the
//   GPU's slice, wait for the copy alone, compute the CPU's slice (the GPU
//   computes meanwhile), enqueue its copy back (the GPU's stream waits for it).
// Home on the CPU, or a GPU sharing the host's memory, makes no copy at all.
// The CUDA specifics live in cuda/async_copy.h; a build without CUDA
// refuses a GPU home with Error::unsupported.
#include <memory>

#include "core/tensor.h"

namespace tandem::train {

// A copy to the host in flight; wait() returns the host tensor once it holds
// the values.
class HostCopy {
 public:
  virtual ~HostCopy() = default;
  virtual const Tensor& wait() = 0;
};

class DeviceLink {
 public:
  // Throws Error::unsupported for a GPU home in a build without CUDA.
  explicit DeviceLink(Device home);
  Device home() const { return home_; }
  // Whether the two sides exchange tensors through copies (false: the CPU and
  // the home share memory, or the home is the CPU).
  bool copies() const { return copies_; }

  // A host tensor for the CPU side's results (pinned memory when they go to a GPU).
  Tensor host_empty(const Shape& shape) const;
  // `t` (on home) readable on the host: a copy started now, after the home's
  // work enqueued so far.
  std::unique_ptr<HostCopy> to_host(const Tensor& t) const;
  // `host` (from host_empty) on home: the home's later work waits for the copy.
  Tensor to_home(const Tensor& host) const;
  // Waits for the home's enqueued work (timing).
  void synchronize() const;

 private:
  Device home_;
  bool copies_ = false;
};

}  // namespace tandem::train
