// report.html's data blob (report_html.h): tracks with their zones (the
// longest ones when there are too many), the binned activity strip, and the
// summary.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "profile/report_html.h"
#include "profile/summary_io.h"

namespace tandem::profile {
namespace {

using nlohmann::json;

uint64_t since(uint64_t ns, uint64_t begin) { return ns > begin ? ns - begin : 0; }
uint64_t duration(const ZoneRecord& z) { return z.end_ns > z.begin_ns ? z.end_ns - z.begin_ns : 0; }

// The shortest duration the timeline keeps, and how many zones of exactly that
// duration fit under the cap (the earliest ones: parents before children).
struct Cut {
  uint64_t min_ns = 0;
  size_t ties = SIZE_MAX;
};

Cut decimation_cut(const Trace& trace, size_t cap) {
  std::vector<uint64_t> d;
  for (const Track& t : trace.tracks)
    for (const ZoneRecord& z : t.zones) d.push_back(duration(z));
  if (d.size() <= cap) return {};
  if (cap == 0) return {UINT64_MAX, 0};
  std::nth_element(d.begin(), d.begin() + ptrdiff_t(cap - 1), d.end(), std::greater<>());
  const uint64_t min_ns = d[cap - 1];
  const size_t longer = size_t(std::count_if(d.begin(), d.end(), [&](uint64_t v) { return v > min_ns; }));
  return {min_ns, cap - longer};
}

// Time per activity in fixed-width bins over the run.
class Strip {
 public:
  Strip(uint64_t wall_ns, size_t bins)
      : bin_ns_(std::max<uint64_t>(1, (wall_ns + bins - 1) / std::max<size_t>(bins, 1))),
        ns_(std::max<size_t>(bins, 1)) {}

  void add(uint64_t t0, uint64_t t1, Activity a) {
    for (uint64_t t = t0; t < t1;) {
      const size_t bin = std::min(size_t(t / bin_ns_), ns_.size() - 1);
      const uint64_t bin_end = bin + 1 == ns_.size() ? t1 : std::min(t1, (bin + 1) * bin_ns_);
      ns_[bin][a] += bin_end - t;
      t = bin_end;
    }
  }

  json to_json() const {
    json bins = json::array();
    for (const TimeSplit& b : ns_) bins.push_back(b.ns);
    return {{"bin_ns", bin_ns_}, {"ns", bins}};
  }

 private:
  uint64_t bin_ns_;
  std::vector<TimeSplit> ns_;
};

// A thread's lifetime as the innermost zone's activity at each instant (idle
// where none is open), the same rule as the summary's split (classify.h).
void add_track_activity(Strip& strip, const Trace& trace, const Track& track, uint64_t life_begin,
                        uint64_t life_end, const std::vector<Activity>& activity_of_location) {
  struct Open {
    uint64_t end;
    Activity activity;
  };
  std::vector<Open> open;
  uint64_t cursor = life_begin;
  auto advance_to = [&](uint64_t t) {
    while (!open.empty() && open.back().end <= t) {
      if (open.back().end > cursor) strip.add(cursor, open.back().end, open.back().activity);
      cursor = std::max(cursor, open.back().end);
      open.pop_back();
    }
    if (t > cursor) strip.add(cursor, t, open.empty() ? Activity::idle : open.back().activity);
    cursor = std::max(cursor, t);
  };
  for (const ZoneRecord& z : track.zones) {
    const uint64_t b = std::max(since(z.begin_ns, trace.begin_ns), cursor);
    advance_to(b);
    // A child never outlasts its parent, whatever the clock said.
    const uint64_t e = std::clamp(since(z.end_ns, trace.begin_ns), b, open.empty() ? UINT64_MAX : open.back().end);
    open.push_back({e, activity_of_location[z.location]});
  }
  advance_to(life_end);
}

json zone_arrays(const Trace& trace, const Track& track, const Cut& cut, size_t& ties_left, size_t& kept) {
  json begin = json::array(), dur = json::array(), loc = json::array(), depth = json::array();
  for (const ZoneRecord& z : track.zones) {
    const uint64_t d = duration(z);
    if (d < cut.min_ns) continue;
    if (d == cut.min_ns && cut.ties != SIZE_MAX) {
      if (ties_left == 0) continue;
      --ties_left;
    }
    begin.push_back(since(z.begin_ns, trace.begin_ns));
    dur.push_back(d);
    loc.push_back(z.location);
    depth.push_back(z.depth);
    ++kept;
  }
  return {{"begin", begin}, {"dur", dur}, {"loc", loc}, {"depth", depth}};
}

// GPU operations as zones of one more kind of track: their names follow the
// trace's locations in `names` (from `first_name` on), coloured as compute
// (kernels, memsets) or I/O (copies). Operations shorter than the threads'
// cut are left out, as zones are.
json gpu_tracks(const Trace& trace, const Cut& cut, size_t first_name, json& names, json& categories,
                json& location_activity, size_t& kept, size_t& total) {
  for (const std::string& n : trace.gpu.names) {
    names.push_back(n);
    categories.push_back("gpu");
    location_activity.push_back(size_t(Activity::compute));
  }
  json tracks = json::array();
  for (const GpuStream& st : trace.gpu.streams) {
    json begin = json::array(), dur = json::array(), loc = json::array(), depth = json::array();
    uint64_t first = UINT64_MAX, last = 0;
    for (const GpuOp& op : st.ops) {
      ++total;
      first = std::min(first, op.start_ns);
      last = std::max(last, op.end_ns);
      const uint64_t d = op.end_ns > op.start_ns ? op.end_ns - op.start_ns : 0;
      if (d < cut.min_ns) continue;
      begin.push_back(since(op.start_ns, trace.begin_ns));
      dur.push_back(d);
      const size_t l = first_name + op.name;
      if (op.kind == GpuOpKind::memcpy && l < location_activity.size()) location_activity[l] = size_t(Activity::io);
      loc.push_back(l);
      depth.push_back(0);
      ++kept;
    }
    if (st.ops.empty()) continue;
    tracks.push_back({{"kind", "gpu_stream"},
                      {"name", "device " + std::to_string(st.device) + " stream " + std::to_string(st.stream)},
                      {"id", st.stream},
                      {"begin_ns", since(first, trace.begin_ns)},
                      {"end_ns", since(last, trace.begin_ns)},
                      {"zones", {{"begin", begin}, {"dur", dur}, {"loc", loc}, {"depth", depth}}}});
  }
  return tracks;
}

}  // namespace

std::string report_data(const Trace& trace, const ProfileSummary& s, const ReportOptions& options) {
  json activities = json::array();
  for (Activity a : kAllActivities) activities.push_back({{"key", activity_key(a)}, {"label", activity_label(a)}});
  json names = json::array(), categories = json::array(), location_activity = json::array();
  std::vector<Activity> activity_of_location;
  for (const Location& l : trace.locations) {
    names.push_back(l.name);
    categories.push_back(l.category);
    activity_of_location.push_back(classify(l.category));
    location_activity.push_back(size_t(activity_of_location.back()));
  }
  std::unordered_map<uint32_t, const ThreadSummary*> thread_of_tid;
  for (const ThreadSummary& t : s.threads) thread_of_tid[t.tid] = &t;

  const Cut cut = decimation_cut(trace, options.zone_cap);
  size_t ties_left = cut.ties, kept = 0, total = 0;
  Strip strip(s.wall_ns, options.strip_bins);
  json tracks = json::array();
  for (const Track& track : trace.tracks) {
    total += track.zones.size();
    const auto it = thread_of_tid.find(track.tid);
    if (it == thread_of_tid.end()) continue;  // no events: the summary left it out too
    const ThreadSummary& t = *it->second;
    const uint64_t life_begin = since(t.begin_ns, trace.begin_ns), life_end = since(t.end_ns, trace.begin_ns);
    add_track_activity(strip, trace, track, life_begin, life_end, activity_of_location);
    tracks.push_back({{"kind", "thread"},
                      {"name", t.name},
                      {"id", t.tid},
                      {"begin_ns", life_begin},
                      {"end_ns", life_end},
                      {"zones", zone_arrays(trace, track, cut, ties_left, kept)}});
  }
  json gpu = gpu_tracks(trace, cut, trace.locations.size(), names, categories, location_activity, kept, total);
  for (json& g : gpu) tracks.push_back(std::move(g));
  const json j = {{"format", "tandem-profile-report"},
                  {"version", 1},
                  {"wall_ns", s.wall_ns},
                  {"activities", activities},
                  {"names", names},
                  {"categories", categories},
                  {"location_activity", location_activity},
                  {"tracks", tracks},
                  {"zones_total", total},
                  {"zones_kept", kept},
                  {"zone_cap", options.zone_cap},
                  {"min_kept_ns", cut.min_ns},
                  {"strip", strip.to_json()},
                  {"summary", json::parse(summary_to_json(s))}};
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

}  // namespace tandem::profile
