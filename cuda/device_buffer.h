#pragma once
// Device memory a kernel owns for its lifetime (converted weights, folded
// constants), allocated and filled at prepare, freed with the kernel.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.h"
#include "core/dtype.h"
#include "core/half.h"
#include "cuda/context.h"

namespace tandem::cuda {

// Counts bytes into device_bytes() (cuda/context.h).
void note_device_buffer(std::ptrdiff_t delta);

// Device memory a kernel owns for its lifetime (converted weights, folded
// constants) or uses only while preparing (algorithm search), allocated at
// prepare, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const ErrorContext& where) : DeviceBuffer(bytes, "cudaMalloc(kernel constant)", where) {}
  // Zero bytes allocate nothing: get() stays null (callers test it to mean
  // "absent", e.g. no residual).
  DeviceBuffer(size_t bytes, const char* what, const ErrorContext& where) : bytes_(bytes) {
    if (!bytes) return;
    check_cuda(cudaMalloc(&p_, bytes), what, where);
    note_device_buffer(std::ptrdiff_t(bytes_));
  }
  // A copy of `bytes` host bytes, complete when this returns. The copy is
  // issued on the context's stream and waited for, so kernels on that stream
  // never see it half-done and the host buffer may be freed right after.
  static DeviceBuffer upload(Context& c, const void* host, size_t bytes, const ErrorContext& where) {
    DeviceBuffer b(bytes, where);
    if (bytes) {
      check_cuda(cudaMemcpyAsync(b.p_, host, bytes, cudaMemcpyHostToDevice, c.stream), "cudaMemcpyAsync(constant)", where);
      check_cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize(constant upload)", where);
    }
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  void release() {
    if (p_) {
      cudaFree(p_);  // never throws: runs in destructors
      note_device_buffer(-std::ptrdiff_t(bytes_));
    }
    p_ = nullptr;
    bytes_ = 0;
  }
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Float values stored on the device as f32, f16 or bf16 (round to nearest
// even).
inline DeviceBuffer upload_floats(Context& c, const std::vector<float>& v, DType t, const ErrorContext& where) {
  if (t == DType::f32) return DeviceBuffer::upload(c, v.data(), v.size() * sizeof(float), where);
  check_supported(t == DType::f16 || t == DType::bf16, "device constant of " + std::string(dtype_name(t)), where);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = t == DType::f16 ? float_to_f16(v[i]) : float_to_bf16(v[i]);
  return DeviceBuffer::upload(c, h.data(), h.size() * sizeof(uint16_t), where);
}

}  // namespace tandem::cuda
