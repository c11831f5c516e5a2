#pragma once
// A collected trace: plain data, independent of the live buffers, in ns on the
// now_ns() (steady_clock) time base. Writers (Chrome JSON now; summary tables
// and an HTML report later) and tests read only this.
//
// Tracks are what a viewer shows as rows: every track is a CPU thread
// (pid 1). GPU activity (CUPTI kernels, copies, API calls) is kept apart in
// Trace::gpu (gpu_activity.h); writers give each device stream its own row.
#include <cstdint>
#include <string>
#include <vector>

#include "profile/gpu_activity.h"

namespace tandem::profile {

// A zone site, copied out of its static SourceLocation.
struct Location {
  std::string name;
  std::string file;
  uint32_t line = 0;
  std::string category;  // "" when none
};

struct ZoneRecord {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;    // zones still open at collect() end at Trace::end_ns
  uint32_t location = 0;  // index into Trace::locations
  uint32_t depth = 0;     // 0 = outermost; a zone's parent is the nearest earlier zone one shallower
};

struct CounterRecord {
  uint64_t ts_ns = 0;
  double value = 0;
  uint32_t counter = 0;  // index into Trace::counter_names
};

struct Track {
  uint32_t pid = 1;
  uint32_t tid = 0;
  uint64_t os_tid = 0;               // the system's id of the thread (Linux gettid), 0 unknown
  std::string name;                  // "" when the thread was never named
  std::vector<ZoneRecord> zones;     // in begin order: parents before their children
  std::vector<CounterRecord> counters;  // in time order
  uint64_t dropped_zones = 0;        // refused because the per-thread cap was reached
  uint64_t dropped_counters = 0;
};

struct Trace {
  uint64_t begin_ns = 0;  // profile::start()
  uint64_t end_ns = 0;    // profile::collect()
  std::vector<Location> locations;
  std::vector<std::string> counter_names;
  std::vector<Track> tracks;
  GpuActivity gpu;  // empty unless a GPU activity source ran
};

// Appends an empty track for a thread the tracer never saw (CUDA calls from
// a library's thread, the memory sampler's counters), with the next free id.
Track& add_track(Trace& trace, uint64_t os_tid, std::string name);

// Moves `gpu` into the trace and gives each API call the profiler id of its
// host thread (by os_tid); a thread the profiler never saw gets a new, empty
// track named after its system id.
void attach_gpu_activity(Trace& trace, GpuActivity gpu);

// Total and self time of all zones with one name (over every track).
// Self = total minus the time of direct children. A zone nested in a zone of
// the same name (recursion) counts in both totals.
struct ZoneStats {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
};

// Sorted by self time, largest first.
std::vector<ZoneStats> summarize_zones(const Trace& trace);

}  // namespace tandem::profile
