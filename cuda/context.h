#pragma once
// Per-GPU state every CUDA kernel shares: the device, one stream all work of
// a plan is issued on (so a whole forward can be captured into a CUDA graph),
// the cuDNN and cuBLASLt handles bound to that stream, and a workspace for
// cuBLASLt. Created on first use of a device; lives for the process.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

namespace tandem::cuda {

struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* lt_workspace = nullptr;
  size_t lt_workspace_bytes = 0;
  cudaDeviceProp props{};
  std::string name() const { return props.name; }
};

// Number of usable GPUs (0 when there is no driver or no device; never throws).
int device_count();

// The context of GPU `device`; throws Error when it is absent.
Context& context(int device);

// Makes `device` current on the calling thread.
void set_device(int device);

// How a host thread waits for the GPU (cudaStreamSynchronize and the like),
// from TANDEM_CUDA_SYNC: "spin" (lowest latency, burns the core),
// "yield", "block" (sleeps: the core is free for CPU work such as JPEG
// decoding), or unset / "auto" (CUDA's choice: it spins when the process
// has fewer contexts than cores). Returns the cudaDeviceSchedule* flag, 0
// for auto; throws Error for any other value. Applied when a context is made.
unsigned sync_flag_from(const char* value);

// Device memory from the device's stream-ordered pool (the executor's arena,
// inputs, scratch), counted with DeviceBuffers in device_bytes().
// Ordered on ctx.stream; free is safe from destructors (never throws).
void* device_alloc(Context& ctx, size_t bytes);
void device_free(Context& ctx, void* p);
// Device memory for the length of one piece of work: allocated from the
// stream-ordered pool and freed in stream order, so the kernels enqueued
// before the destructor still see it. Zero bytes allocate nothing.
class Scratch {
 public:
  Scratch(Context& c, size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  Context& c_;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Keeps every freed block in the device's default pool instead of returning
// it to the driver at each synchronization (so steady-state device_alloc
// never reaches the driver).
void keep_pool_memory(int device);
// Copies host memory to the device and waits (for weights at prepare).
void upload(Context& ctx, void* dst, const void* src, size_t bytes);

// Device bytes tandem holds now (pool blocks and DeviceBuffers, every GPU),
// their high-water mark, and a reset of the mark to now (to measure a
// steady state apart from preparation's transient buffers).
size_t device_bytes();
size_t device_peak_bytes();
void reset_device_peak();

}  // namespace tandem::cuda
