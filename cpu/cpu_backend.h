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
// Whether oneDNN computes in bf16 on this CPU. x86-64 CPUs from AVX-512 on
// do (natively or emulated); oneDNN's builds for other architectures
// without Arm Compute Library, and older x86, refuse bf16 primitives
// (tandem's own bf16 loops run anywhere).
bool has_bf16();
// Whether oneDNN's integer convolution adds a float residual (a binary
// post-op) right. Off x86-64, oneDNN 2.x runs integer convolutions as a
// GEMM with its reference post-processing, which adds it at the wrong
// elements (measured on aarch64: outputs off by the residual's size); the
// 8-bit residual of an 8-bit output (a sum post-op) is exact there.
bool integer_conv_takes_float_residual();

}  // namespace tandem::cpu
