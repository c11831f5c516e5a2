#include "profile/gpu_by_stage.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tandem::profile {

namespace {

// The innermost zone of `t` open at `ts`. Zones are in begin order and
// nested, so of the zones open at ts the innermost began last: walk back from
// the last zone begun by ts to the first one still open.
const ZoneRecord* innermost_at(const Track& t, uint64_t ts) {
  auto it = std::upper_bound(t.zones.begin(), t.zones.end(), ts,
                             [](uint64_t v, const ZoneRecord& z) { return v < z.begin_ns; });
  while (it != t.zones.begin()) {
    --it;
    if (it->end_ns > ts) return &*it;
  }
  return nullptr;
}

}  // namespace

std::vector<StageGpuStats> gpu_time_by_stage(const Trace& trace) {
  const GpuActivity& gpu = trace.gpu;
  std::unordered_map<uint32_t, const GpuApiCall*> launch;  // by correlation id
  for (const GpuApiCall& c : gpu.api_calls)
    if (c.correlation != 0) launch.emplace(c.correlation, &c);
  std::unordered_map<uint32_t, const Track*> track;  // by profiler thread id
  for (const Track& t : trace.tracks) track.emplace(t.tid, &t);
  auto stage_of = [&](const GpuOp& op) -> std::string {
    auto l = op.correlation != 0 ? launch.find(op.correlation) : launch.end();
    if (l == launch.end()) return kNoZone;
    auto t = track.find(l->second->tid);
    if (t == track.end()) return kNoZone;
    const ZoneRecord* z = innermost_at(*t->second, l->second->start_ns);
    return z ? trace.locations.at(z->location).name : kNoZone;
  };
  std::map<std::string, StageGpuStats> by_stage;
  for (const GpuStream& s : gpu.streams)
    for (const GpuOp& op : s.ops) {
      const std::string stage = stage_of(op);
      StageGpuStats& st = by_stage[stage];
      st.stage = stage;
      st.ops++;
      const uint64_t ns = op.end_ns > op.start_ns ? op.end_ns - op.start_ns : 0;
      (op.kind == GpuOpKind::memcpy ? st.copy_ns : st.kernel_ns) += ns;
    }
  std::vector<StageGpuStats> out;
  for (auto& [name, st] : by_stage) out.push_back(st);
  std::stable_sort(out.begin(), out.end(),
                   [](const StageGpuStats& a, const StageGpuStats& b) { return a.total_ns() > b.total_ns(); });
  return out;
}

}  // namespace tandem::profile
