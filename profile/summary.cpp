// summarize_zones (trace.h) and summarize (summary.h): both rest on the self
// time of every zone, computed once per track.
#include "profile/summary.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace tandem::profile {
namespace {

uint64_t duration(const ZoneRecord& z) { return z.end_ns > z.begin_ns ? z.end_ns - z.begin_ns : 0; }

struct ZoneSelf {
  uint64_t self_ns = 0;
  bool top = false;  // no zone of the thread was open when it began
};

// Zones are in begin order, so a zone's parent is the innermost zone still
// open: a stack of open zones, popped by depth. The parent loses the child's
// time even when the depths skip a level (the zone between was dropped): the
// time then belongs to the innermost zone that was recorded.
std::vector<ZoneSelf> self_times(const Track& track) {
  std::vector<ZoneSelf> out(track.zones.size());
  std::vector<size_t> open;
  for (size_t i = 0; i < track.zones.size(); ++i) {
    const ZoneRecord& z = track.zones[i];
    while (!open.empty() && track.zones[open.back()].depth >= z.depth) open.pop_back();
    const uint64_t dur = duration(z);
    out[i] = {dur, open.empty()};
    if (!open.empty()) {
      uint64_t& parent = out[open.back()].self_ns;
      parent -= std::min(parent, dur);
    }
    open.push_back(i);
  }
  return out;
}

// Location index -> stage index, stages keyed by name in first-seen order.
template <class Stage, class Make>
std::vector<size_t> stages_by_name(const Trace& trace, std::vector<Stage>& stages, Make make) {
  std::unordered_map<std::string, size_t> by_name;
  std::vector<size_t> of_location(trace.locations.size());
  for (size_t i = 0; i < trace.locations.size(); ++i) {
    auto [it, added] = by_name.try_emplace(trace.locations[i].name, stages.size());
    if (added) stages.push_back(make(trace.locations[i]));
    of_location[i] = it->second;
  }
  return of_location;
}

// A thread with at least one event: its lifetime, split by activity.
ThreadSummary summarize_thread(const Track& track, const std::vector<ZoneSelf>& self,
                               const std::vector<Activity>& activity_of_location) {
  ThreadSummary t;
  t.tid = track.tid;
  t.name = track.name.empty() ? "thread " + std::to_string(track.tid) : track.name;
  uint64_t begin = UINT64_MAX, end = 0;
  for (size_t i = 0; i < track.zones.size(); ++i) {
    const ZoneRecord& z = track.zones[i];
    begin = std::min(begin, z.begin_ns);
    end = std::max(end, std::max(z.begin_ns, z.end_ns));
    t.split[activity_of_location[z.location]] += self[i].self_ns;
  }
  for (const CounterRecord& c : track.counters) {
    begin = std::min(begin, c.ts_ns);
    end = std::max(end, c.ts_ns);
  }
  t.begin_ns = begin;
  t.end_ns = end;
  const uint64_t busy = t.split.total();
  t.split[Activity::idle] = end - begin > busy ? end - begin - busy : 0;
  return t;
}

// Samples of every thread, taken in time order across threads for `last`.
std::vector<CounterSummary> summarize_counters(const Trace& trace) {
  std::vector<CounterSummary> out(trace.counter_names.size());
  std::vector<double> sum(out.size(), 0.0);
  std::vector<uint64_t> last_ts(out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) out[i].name = trace.counter_names[i];
  for (const Track& track : trace.tracks)
    for (const CounterRecord& c : track.counters) {
      if (c.counter >= out.size()) continue;
      CounterSummary& k = out[c.counter];
      k.min = k.samples ? std::min(k.min, c.value) : c.value;
      k.max = k.samples ? std::max(k.max, c.value) : c.value;
      if (c.ts_ns >= last_ts[c.counter]) last_ts[c.counter] = c.ts_ns, k.last = c.value;
      sum[c.counter] += c.value;
      k.samples++;
    }
  std::vector<CounterSummary> kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].samples) out[i].mean = sum[i] / double(out[i].samples), kept.push_back(out[i]);
  return kept;
}

}  // namespace

std::vector<ZoneStats> summarize_zones(const Trace& trace) {
  std::vector<ZoneStats> stats;
  const std::vector<size_t> of_location =
      stages_by_name(trace, stats, [](const Location& l) { return ZoneStats{l.name, 0, 0, 0}; });
  for (const Track& track : trace.tracks) {
    const std::vector<ZoneSelf> self = self_times(track);
    for (size_t i = 0; i < track.zones.size(); ++i) {
      ZoneStats& s = stats[of_location[track.zones[i].location]];
      s.count++;
      s.total_ns += duration(track.zones[i]);
      s.self_ns += self[i].self_ns;
    }
  }
  std::erase_if(stats, [](const ZoneStats& s) { return s.count == 0; });
  std::sort(stats.begin(), stats.end(),
            [](const ZoneStats& a, const ZoneStats& b) { return a.self_ns > b.self_ns; });
  return stats;
}

uint64_t percentile_sorted(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * double(sorted.size()));
  const size_t i = size_t(std::clamp(rank, 1.0, double(sorted.size()))) - 1;
  return sorted[i];
}

ProfileSummary summarize(const Trace& trace, double ns_per_event) {
  ProfileSummary s;
  s.wall_ns = trace.end_ns > trace.begin_ns ? trace.end_ns - trace.begin_ns : 0;
  std::vector<StageSummary> stages;
  const std::vector<size_t> of_location = stages_by_name(trace, stages, [](const Location& l) {
    StageSummary st;
    st.name = l.name;
    st.activity = classify(l.category);
    return st;
  });
  std::vector<Activity> activity_of_location;
  for (const Location& l : trace.locations) activity_of_location.push_back(classify(l.category));
  // Per-instance durations, for the percentiles.
  std::vector<std::vector<uint64_t>> durations(stages.size());
  for (const Track& track : trace.tracks) {
    const std::vector<ZoneSelf> self = self_times(track);
    for (size_t i = 0; i < track.zones.size(); ++i) {
      const size_t k = of_location[track.zones[i].location];
      const uint64_t dur = duration(track.zones[i]);
      stages[k].count++;
      stages[k].total_ns += dur;
      stages[k].self_ns += self[i].self_ns;
      durations[k].push_back(dur);
    }
    s.overhead.zones += track.zones.size();
    s.overhead.counters += track.counters.size();
    s.overhead.dropped_zones += track.dropped_zones;
    s.overhead.dropped_counters += track.dropped_counters;
    // A row with counters alone (the memory sampler's "process" row) is no
    // thread at work: it stays out of the time split.
    if (track.zones.empty()) continue;
    ThreadSummary t = summarize_thread(track, self, activity_of_location);
    s.overall += t.split;
    s.threads.push_back(std::move(t));
  }
  for (size_t k = 0; k < stages.size(); ++k) {
    StageSummary& st = stages[k];
    if (st.count == 0) continue;
    std::sort(durations[k].begin(), durations[k].end());
    st.mean_ns = st.total_ns / st.count;
    st.p50_ns = percentile_sorted(durations[k], 50);
    st.p99_ns = percentile_sorted(durations[k], 99);
    st.max_ns = durations[k].back();
    st.share = s.wall_ns == 0 ? 0.0 : double(st.total_ns) / double(s.wall_ns);
    s.stages.push_back(std::move(st));
  }
  std::stable_sort(s.stages.begin(), s.stages.end(),
                   [](const StageSummary& a, const StageSummary& b) { return a.self_ns > b.self_ns; });
  s.overhead.ns_per_event = ns_per_event;
  s.counters = summarize_counters(trace);
  s.gpu = summarize_gpu(trace);
  s.layers = layer_table(s.stages, s.gpu.by_stage);
  return s;
}

}  // namespace tandem::profile
