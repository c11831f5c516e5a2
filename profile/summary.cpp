// summarize_zones: total and self time per zone name.
#include <algorithm>
#include <unordered_map>

#include "profile/trace.h"

namespace tandem::profile {
namespace {

struct Open {
  uint32_t depth;
  size_t stats;  // index of its name's ZoneStats
};

}  // namespace

std::vector<ZoneStats> summarize_zones(const Trace& trace) {
  std::vector<ZoneStats> stats;
  std::unordered_map<std::string, size_t> by_name;
  std::vector<size_t> of_location(trace.locations.size());
  for (size_t i = 0; i < trace.locations.size(); ++i) {
    auto [it, added] = by_name.try_emplace(trace.locations[i].name, stats.size());
    if (added) stats.push_back({trace.locations[i].name, 0, 0, 0});
    of_location[i] = it->second;
  }
  // Zones are in begin order, so a zone's parent is the innermost open zone
  // one level shallower: a stack of open zones, popped by depth.
  std::vector<Open> stack;
  for (const Track& track : trace.tracks) {
    stack.clear();
    for (const ZoneRecord& z : track.zones) {
      const uint64_t dur = z.end_ns - z.begin_ns;
      ZoneStats& s = stats[of_location[z.location]];
      s.count++;
      s.total_ns += dur;
      s.self_ns += dur;
      while (!stack.empty() && stack.back().depth >= z.depth) stack.pop_back();
      if (!stack.empty() && stack.back().depth + 1 == z.depth) stats[stack.back().stats].self_ns -= dur;
      stack.push_back({z.depth, of_location[z.location]});
    }
  }
  std::erase_if(stats, [](const ZoneStats& s) { return s.count == 0; });
  std::sort(stats.begin(), stats.end(),
            [](const ZoneStats& a, const ZoneStats& b) { return a.self_ns > b.self_ns; });
  return stats;
}

}  // namespace tandem::profile
