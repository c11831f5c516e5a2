#pragma once
// The CUDA backend: kernels from cuda/registry.h, device memory from the
// CUDA runtime's stream-ordered pool (freed blocks are kept for reuse, so
// steady-state runs never reach cudaMalloc), and copies through pinned host
// staging on the context's stream.
#include <map>
#include <mutex>
#include <vector>

#include "core/backend.h"
#include "cuda/context.h"

namespace tandem::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  std::string name() const override;
  Device device() const override { return Device::cuda(ctx_.device); }
  bool supports(const OpDesc& op) const override;
  KernelPlan prepare(const OpDesc& op) override;
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy_from_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void* allocate_host(size_t bytes) override;
  void deallocate_host(void* ptr) override;
  void synchronize() override;
  void release_cached_memory() override;
  std::unique_ptr<Recording> record(const std::function<void()>& body) override;

  Context& context() { return ctx_; }

 private:
  // Pinned host buffer for copies, grown on demand.
  void* staging(size_t bytes);
  // Whether [p, p + bytes) lies in one allocate_host block (copied directly).
  bool pinned(const void* p, size_t bytes);

  Context& ctx_;
  std::mutex staging_mutex_;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  std::mutex pinned_mutex_;
  std::map<const char*, size_t> pinned_;  // allocate_host blocks: start -> bytes
};

// The backend of GPU `device` (created on first use); Error when absent.
CudaBackend& cuda_backend(int device);

}  // namespace tandem::cuda
