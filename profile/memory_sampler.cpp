#include "profile/memory_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "profile/clock.h"

namespace tandem::profile {
namespace {

std::atomic<MemoryProbe> g_device_probe{nullptr};

uint32_t counter_index(Trace& trace, const char* name) {
  auto it = std::find(trace.counter_names.begin(), trace.counter_names.end(), name);
  if (it != trace.counter_names.end()) return uint32_t(it - trace.counter_names.begin());
  trace.counter_names.push_back(name);
  return uint32_t(trace.counter_names.size() - 1);
}

Track& track_of(Trace& trace, uint64_t os_tid) {
  for (Track& t : trace.tracks)
    if (os_tid != 0 && t.os_tid == os_tid) return t;
  return add_track(trace, os_tid, "process");
}

}  // namespace

MemoryProbe set_device_memory_probe(MemoryProbe probe) { return g_device_probe.exchange(probe); }

uint64_t host_resident_bytes() {
#if defined(__linux__)
  // statm: size resident shared text lib data dt, in pages.
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? uint64_t(resident) * uint64_t(page) : 0;
#else
  return 0;
#endif
}

MemorySampler::MemorySampler(std::chrono::milliseconds period) : period_(period) {
  sample();
  thread_ = std::thread([this] { run(); });
}

MemorySampler::~MemorySampler() { stop(); }

void MemorySampler::sample() {
  MemorySample s;
  s.ts_ns = now_ns();
  s.host_bytes = host_resident_bytes();
  if (MemoryProbe p = g_device_probe.load()) s.has_device = true, s.device_bytes = p();
  std::lock_guard lock(mutex_);
  samples_.push_back(s);
}

void MemorySampler::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period_, [this] { return stopping_; })) {
    lock.unlock();
    sample();
    lock.lock();
  }
}

std::vector<MemorySample> MemorySampler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return samples_;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  sample();
  std::lock_guard lock(mutex_);
  return samples_;
}

void add_memory_counters(Trace& trace, const std::vector<MemorySample>& samples, uint64_t os_tid) {
  if (samples.empty()) return;
  const uint32_t host = counter_index(trace, kHostMemoryCounter);
  const bool any_device = std::any_of(samples.begin(), samples.end(), [](const MemorySample& s) { return s.has_device; });
  const uint32_t device = any_device ? counter_index(trace, kDeviceMemoryCounter) : 0;
  Track& track = track_of(trace, os_tid);
  constexpr double kMiB = 1024.0 * 1024.0;
  for (const MemorySample& s : samples) {
    if (s.ts_ns < trace.begin_ns || s.ts_ns > trace.end_ns) continue;
    if (s.host_bytes) track.counters.push_back({s.ts_ns, double(s.host_bytes) / kMiB, host});
    if (s.has_device) track.counters.push_back({s.ts_ns, double(s.device_bytes) / kMiB, device});
  }
  std::stable_sort(track.counters.begin(), track.counters.end(),
                   [](const CounterRecord& a, const CounterRecord& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace tandem::profile
