#pragma once
// Base for test doubles of a device: its memory is the CPU backend's, so
// a test can give it whatever kernel behaviour it studies (missing ops,
// refusals, memory limits) without a GPU.
#include "core/backend.h"
#include "cpu/cpu_backend.h"

namespace tandem::testing {

class CpuMemoryBackend : public Backend {
 public:
  void* allocate(size_t bytes) override { return cpu().allocate(bytes); }
  void deallocate(void* p) override { cpu().deallocate(p); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override { cpu().copy_from_host(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { cpu().copy_to_host(dst, src, bytes); }

 protected:
  static cpu::CpuBackend& cpu() { return cpu::cpu_backend(); }
};

}  // namespace tandem::testing
