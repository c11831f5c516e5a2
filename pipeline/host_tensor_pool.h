#pragma once
// Host tensors a network's input is filled into, from the memory its
// backend copies fastest (Backend::allocate_host: pinned on a GPU, so the
// upload is one DMA copy instead of a wait for the stream, a memcpy into the
// staging buffer and the copy out of it, all under the device lock), reused
// because pinning is slow (cudaMallocHost maps and locks every page) and a
// run's buffers come in a few shapes.
#include <cstddef>
#include <mutex>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"

namespace tandem::pipeline {

class HostTensorPool {
 public:
  // Keeps at most `spares` unused tensors; the oldest go first.
  explicit HostTensorPool(Backend& backend, size_t spares = 8)
      : backend_(backend), max_spares_(spares) {}

  // A tensor of this dtype and shape, its contents left from an earlier use.
  // Thread-safe.
  Tensor take(DType dtype, const Shape& shape);
  // Returns `t` (from take) for reuse. Thread-safe.
  void give(Tensor t);

 private:
  Backend& backend_;
  size_t max_spares_;
  std::mutex mutex_;
  std::vector<Tensor> spares_;
};

}  // namespace tandem::pipeline
