#pragma once
// A growing pinned host buffer for copies off the device. A copy into
// pageable memory goes through the driver's own staging, one more pass, and
// cudaMemcpyAsync into pageable memory returns only when the copy is done:
// the calling thread then waits for everything queued on the stream before
// it, which undoes the point of queueing work and synchronizing once.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/check.h"

namespace tandem::cuda {

class PinnedStaging {
 public:
  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  ~PinnedStaging() {
    if (p_) cudaFreeHost(p_);  // status ignored: a destructor cannot report it
  }
  // At least `bytes`; the contents are not kept when it grows.
  uint8_t* get(size_t bytes, const char* what) {
    if (bytes <= bytes_) return p_;
    // Doubling: each pinned allocation costs a call into the driver.
    const size_t want = std::max(bytes, bytes_ * 2);
    if (p_) check_cuda(cudaFreeHost(p_), what);
    p_ = nullptr, bytes_ = 0;
    check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&p_), want, cudaHostAllocPortable), what);
    bytes_ = want;
    return p_;
  }
  const uint8_t* data() const { return p_; }

 private:
  uint8_t* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tandem::cuda
