#pragma once
#include <string>
#include <memory>

#include "core/backend.h"

namespace tandem::cpu {

// oneDNN-backed CPU backend. Thread count is process-wide (OpenMP).
class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  bool supports(const OpDesc& op) const override;
  KernelPlan prepare(const OpDesc& op) override;
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy_from_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
};

// The shared instance.
CpuBackend& cpu_backend();
// Sets the number of compute threads (0 = all cores).
void set_num_threads(int n);
int num_threads();
// oneDNN's version and the instruction set its kernels use here, with what
// that means for int8 ("avx512_core_vnni (int8 on VNNI)").
std::string instruction_set();

}  // namespace tandem::cpu
