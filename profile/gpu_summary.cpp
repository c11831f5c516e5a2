#include "profile/gpu_summary.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "profile/classify.h"

namespace tandem::profile {
namespace {

uint64_t length(const GpuOp& op) { return op.end_ns > op.start_ns ? op.end_ns - op.start_ns : 0; }

std::vector<Interval> wait_gpu_zones(const Trace& trace) {
  std::vector<Interval> out;
  for (const Track& t : trace.tracks)
    for (const ZoneRecord& z : t.zones)
      if (classify(trace.locations[z.location].category) == Activity::wait_gpu) out.push_back({z.begin_ns, z.end_ns});
  return out;
}

// Walks disjoint sorted intervals alongside increasing instants.
class Cursor {
 public:
  explicit Cursor(const std::vector<Interval>& v) : v_(v) {}
  bool covers(uint64_t t) {
    while (i_ < v_.size() && v_[i_].end <= t) ++i_;
    return i_ < v_.size() && v_[i_].begin <= t;
  }

 private:
  const std::vector<Interval>& v_;
  size_t i_ = 0;
};

GpuTime bucket_time(const Trace& trace) {
  std::vector<Interval> compute, copies, calls;
  for (const GpuStream& s : trace.gpu.streams)
    for (const GpuOp& op : s.ops) (op.kind == GpuOpKind::memcpy ? copies : compute).push_back({op.start_ns, op.end_ns});
  for (const GpuApiCall& c : trace.gpu.api_calls) calls.push_back({c.start_ns, c.end_ns});
  const std::array<std::vector<Interval>, 4> sets = {union_intervals(std::move(compute)), union_intervals(std::move(copies)),
                                                     union_intervals(wait_gpu_zones(trace)), union_intervals(std::move(calls))};
  std::vector<uint64_t> cuts = {trace.begin_ns, trace.end_ns};
  for (const auto& set : sets)
    for (const Interval& i : set) {
      cuts.push_back(std::clamp(i.begin, trace.begin_ns, trace.end_ns));
      cuts.push_back(std::clamp(i.end, trace.begin_ns, trace.end_ns));
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  Cursor compute_at(sets[0]), copy_at(sets[1]), wait_at(sets[2]), call_at(sets[3]);
  GpuTime time;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const uint64_t t = cuts[k], len = cuts[k + 1] - cuts[k];
    // Every cursor is asked at every cut so each keeps pace.
    const bool kernel = compute_at.covers(t), copy = copy_at.covers(t);
    const bool wait = wait_at.covers(t), call = call_at.covers(t);
    if (kernel) time.kernels_ns += len;
    else if (copy) time.copies_only_ns += len;
    else if (wait) time.sync_ns += len;
    else if (call) time.in_calls_ns += len;
    else time.not_submitting_ns += len;
  }
  return time;
}

std::vector<KernelStats> top_kernels(const GpuActivity& gpu) {
  std::unordered_map<uint32_t, KernelStats> by_name;
  for (const GpuStream& s : gpu.streams)
    for (const GpuOp& op : s.ops) {
      if (op.kind != GpuOpKind::kernel) continue;
      const uint64_t d = length(op);
      KernelStats& k = by_name[op.name];
      if (k.count == 0) k.name = op.name < gpu.names.size() ? gpu.names[op.name] : "?", k.min_ns = d;
      k.count++;
      k.total_ns += d;
      k.min_ns = std::min(k.min_ns, d);
      k.max_ns = std::max(k.max_ns, d);
    }
  std::vector<KernelStats> out;
  for (auto& [id, k] : by_name) {
    k.mean_ns = k.total_ns / k.count;
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (out.size() > kTopKernels) out.resize(kTopKernels);
  return out;
}

std::vector<CopyStats> copies_by_kind(const GpuActivity& gpu) {
  std::array<CopyStats, kCopyKinds> by_kind{};
  for (const GpuStream& s : gpu.streams)
    for (const GpuOp& op : s.ops) {
      if (op.kind != GpuOpKind::memcpy) continue;
      CopyStats& c = by_kind[size_t(op.copy)];
      c.kind = op.copy;
      c.count++;
      c.bytes += op.bytes;
      c.total_ns += length(op);
    }
  std::vector<CopyStats> out;
  for (CopyStats& c : by_kind) {
    if (c.count == 0) continue;
    c.gb_per_s = c.total_ns == 0 ? 0.0 : double(c.bytes) / double(c.total_ns);  // bytes/ns = GB/s
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<Interval> union_intervals(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.end <= i.begin; });
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (!out.empty() && i.begin <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

uint64_t total_length(const std::vector<Interval>& disjoint) {
  uint64_t n = 0;
  for (const Interval& i : disjoint) n += i.end - i.begin;
  return n;
}

GpuSummary summarize_gpu(const Trace& trace) {
  GpuSummary s;
  const GpuActivity& gpu = trace.gpu;
  s.note = gpu.unavailable;
  s.present = gpu.collected;
  if (!s.present) return s;
  s.span_ns = trace.end_ns > trace.begin_ns ? trace.end_ns - trace.begin_ns : 0;
  s.time = bucket_time(trace);
  s.streams = gpu.streams.size();
  for (const GpuStream& st : gpu.streams)
    for (const GpuOp& op : st.ops)
      (op.kind == GpuOpKind::kernel ? s.kernels : op.kind == GpuOpKind::memcpy ? s.copies : s.memsets)++;
  s.api_calls = gpu.api_calls.size();
  s.top_kernels = top_kernels(gpu);
  s.copies_by_kind = copies_by_kind(gpu);
  s.by_stage = gpu_time_by_stage(trace);
  s.dropped = gpu.dropped;
  return s;
}

}  // namespace tandem::profile
