#pragma once
// Where the time of a traced run went, from its CPU zones: per thread and
// overall, split by activity (classify.h); per zone name, a stage table with
// per-instance percentiles; the profiler's own cost; a one-line verdict.
// summary.txt and summary.json (summary_io.h) are this, written out.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "profile/classify.h"
#include "profile/gpu_summary.h"
#include "profile/layer_table.h"
#include "profile/trace.h"

namespace tandem::profile {

struct ThreadSummary {
  std::string name;  // "thread N" when it was never named
  uint32_t tid = 0;
  // Lifetime: its first event to its last (ns on the trace's time base).
  uint64_t begin_ns = 0, end_ns = 0;
  // Sums to end_ns - begin_ns: idle is the lifetime no top-level zone covers.
  TimeSplit split;
};

// Every zone with one name, over all threads.
struct StageSummary {
  std::string name;
  Activity activity = Activity::compute;  // of its (first) site's category
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;  // total minus the time of zones nested directly in it
  uint64_t mean_ns = 0;
  // Nearest-rank percentiles of the instances' durations: the smallest
  // duration d with at least p% of instances <= d.
  uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  double share = 0;  // total / wall: over 1 when it runs on several threads at once
};

struct Overhead {
  uint64_t zones = 0, counters = 0;  // events recorded
  uint64_t dropped_zones = 0, dropped_counters = 0;
  double ns_per_event = 0;  // measured when the session started (overhead.h)
  double estimated_ns() const { return double(zones + counters) * ns_per_event; }
};

// One counter over the run (queue depths, images done, memory): the samples'
// minimum, time-unweighted mean, maximum and last value.
struct CounterSummary {
  std::string name;
  uint64_t samples = 0;
  double min = 0, mean = 0, max = 0, last = 0;
};

struct ProfileSummary {
  uint64_t wall_ns = 0;  // the trace's span
  std::vector<ThreadSummary> threads;
  TimeSplit overall;  // sum over threads (thread time, not wall time)
  std::vector<StageSummary> stages;  // largest self time first
  std::vector<CounterSummary> counters;  // in Trace::counter_names order
  Overhead overhead;
  GpuSummary gpu;  // gpu.present: GPU activity was recorded (gpu_summary.h)
  std::vector<LayerRow> layers;  // training runs: per layer (layer_table.h)
  std::string verdict;
};

// Everything but the verdict (and overhead.ns_per_event, given).
ProfileSummary summarize(const Trace& trace, double ns_per_event = 0);

// Names the limiting stage and the next thing to try, from the split and the
// stage table alone. Pipelines that know their threads say more (the tag
// pipeline's rule is pipeline/tag_profile.h).
std::string generic_verdict(const ProfileSummary& s);

using VerdictRule = std::function<std::string(const ProfileSummary&)>;

// For verdict rules: the summed split of the threads whose name starts with
// `prefix` (threads: how many there were), and one stage's total time (0
// when the run never opened that zone).
struct ThreadGroup {
  int threads = 0;
  TimeSplit split;
  double share(Activity a) const { return split.share(a); }
};
ThreadGroup thread_group(const ProfileSummary& s, const std::string& prefix);
const StageSummary* find_stage(const ProfileSummary& s, const std::string& name);  // null: none
uint64_t stage_total(const ProfileSummary& s, const std::string& name);

// Nearest-rank percentile (0 < p <= 100) of sorted values; 0 when empty.
uint64_t percentile_sorted(const std::vector<uint64_t>& sorted, double p);

}  // namespace tandem::profile
