#pragma once
// Memory over a profiled run, as trace counters: the process's resident set
// (Linux: /proc/self/statm) and, where a backend installed a probe, the device
// memory tandem holds (the CUDA layer counts its allocations). A thread of its
// own samples every period, so nothing in a hot path pays for it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "profile/trace.h"

namespace tandem::profile {

// Bytes in use on the device; must be callable from any thread.
using MemoryProbe = uint64_t (*)();

// Installs the device probe (nullptr removes it). Returns the one it replaces.
MemoryProbe set_device_memory_probe(MemoryProbe probe);

// Resident set size of this process in bytes; 0 where the OS does not say.
uint64_t host_resident_bytes();

struct MemorySample {
  uint64_t ts_ns = 0;  // now_ns() time base
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
  bool has_device = false;  // a probe was installed at that moment
};

class MemorySampler {
 public:
  explicit MemorySampler(std::chrono::milliseconds period = std::chrono::milliseconds(20));
  ~MemorySampler();
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  // Stops the thread (once) and returns the samples, the last one taken now.
  std::vector<MemorySample> stop();

 private:
  void run();
  void sample();

  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<MemorySample> samples_;
  std::thread thread_;
};

// Counter names as they appear in trace.json and the summary.
inline constexpr const char* kHostMemoryCounter = "host memory (RSS, MiB)";
inline constexpr const char* kDeviceMemoryCounter = "device memory held (MiB)";

// Adds the samples to `trace` as counters on the track of system thread
// `os_tid` (a new track named "process" when that thread recorded nothing).
void add_memory_counters(Trace& trace, const std::vector<MemorySample>& samples, uint64_t os_tid);

}  // namespace tandem::profile
