#pragma once
// The GPU part of a profile summary, from Trace::gpu and the CPU zones.
//
// Busy is the union of every kernel, memset and copy interval over all
// streams and devices (never a sum: two streams busy at once are busy once).
// Each instant of the trace's span falls in exactly one bucket, first match:
//   kernels         a kernel or memset runs
//   copies only     only copies run: the compute engines wait on a transfer
//   idle, sync      nothing runs and a host thread is in a "wait.gpu" zone:
//                   the host waits for work that is not there (a sync after
//                   the last kernel, a serialized pipeline)
//   idle, in calls  nothing runs and a host thread is inside a CUDA API call
//                   (launch latency, allocation, a blocking runtime call)
//   idle, CPU not submitting   none of the above: the host is busy elsewhere
// The buckets are a heuristic from overlap in time, not causality: a thread
// in wait.gpu for another stream's work still marks the gap "sync".
#include <cstdint>
#include <string>
#include <vector>

#include "profile/gpu_by_stage.h"
#include "profile/trace.h"

namespace tandem::profile {

struct Interval {
  uint64_t begin = 0, end = 0;
};

// Sorted, disjoint, non-empty intervals covering exactly what the input covers.
std::vector<Interval> union_intervals(std::vector<Interval> intervals);
uint64_t total_length(const std::vector<Interval>& disjoint);

struct KernelStats {
  std::string name;
  uint64_t count = 0, total_ns = 0, mean_ns = 0, min_ns = 0, max_ns = 0;
};

struct CopyStats {
  CopyKind kind = CopyKind::other;
  uint64_t count = 0, bytes = 0, total_ns = 0;
  double gb_per_s = 0;  // bytes / total time of the copies (not of the wall)
};

struct GpuTime {
  uint64_t kernels_ns = 0, copies_only_ns = 0;                   // busy
  uint64_t sync_ns = 0, in_calls_ns = 0, not_submitting_ns = 0;  // idle
  uint64_t busy_ns() const { return kernels_ns + copies_only_ns; }
  uint64_t idle_ns() const { return sync_ns + in_calls_ns + not_submitting_ns; }
};

struct GpuSummary {
  bool present = false;  // GPU activity was recorded
  std::string note;      // why it was not, or that it is incomplete ("" when neither)
  uint64_t span_ns = 0;  // the trace's wall span the buckets cover
  GpuTime time;
  uint64_t streams = 0, kernels = 0, copies = 0, memsets = 0, api_calls = 0;
  std::vector<KernelStats> top_kernels;  // by total time, at most kTopKernels
  std::vector<CopyStats> copies_by_kind;  // directions that occurred, in CopyKind order
  std::vector<StageGpuStats> by_stage;    // GPU time by launching zone (gpu_by_stage.h), largest first
  uint64_t dropped = 0;
};

inline constexpr size_t kTopKernels = 10;

GpuSummary summarize_gpu(const Trace& trace);

}  // namespace tandem::profile
