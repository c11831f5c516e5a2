#include "profile/layer_table.h"

#include <algorithm>
#include <map>

#include "profile/summary.h"

namespace tandem::profile {

namespace {

// "forward features.0" -> ("features.0", forward); "split features.0 cpu
// backward" -> ("features.0", the CPU side); anything else: no layer.
enum class Part : uint8_t { none, forward, backward, gpu_side, cpu_side };

Part parse(const std::string& stage, std::string& layer) {
  auto after = [&](const char* prefix) {
    const std::string p(prefix);
    return stage.size() > p.size() && stage.compare(0, p.size(), p) == 0 ? stage.substr(p.size()) : std::string();
  };
  if (std::string l = after("forward "); !l.empty()) return layer = l, Part::forward;
  if (std::string l = after("backward "); !l.empty()) return layer = l, Part::backward;
  if (std::string l = after("split "); !l.empty()) {
    for (const char* side : {" cpu forward", " cpu backward", " gpu forward", " gpu backward", " home forward",
                             " home backward"}) {
      const std::string s(side);
      if (l.size() > s.size() && l.compare(l.size() - s.size(), s.size(), s) == 0) {
        layer = l.substr(0, l.size() - s.size());
        return s.starts_with(" cpu") ? Part::cpu_side : Part::gpu_side;
      }
    }
  }
  return Part::none;
}

}  // namespace

std::vector<LayerRow> layer_table(const std::vector<StageSummary>& stages, const std::vector<StageGpuStats>& gpu) {
  std::map<std::string, LayerRow> rows;
  bool backward_seen = false;  // "forward X" alone is not a training profile
  for (const StageSummary& st : stages) {
    std::string layer;
    const Part part = parse(st.name, layer);
    if (part == Part::none) continue;
    LayerRow& r = rows[layer];
    r.layer = layer;
    if (part == Part::forward) r.forward_ns += st.total_ns;
    if (part == Part::backward) r.backward_ns += st.total_ns, backward_seen = true;
    if (part == Part::cpu_side) r.cpu_side_ns += st.total_ns;
  }
  if (!backward_seen) return {};
  for (const StageGpuStats& g : gpu) {
    std::string layer;
    if (parse(g.stage, layer) == Part::none) continue;
    auto it = rows.find(layer);
    if (it != rows.end()) it->second.gpu_ns += g.total_ns();
  }
  // Forward zones nest as the modules do, so their totals are inclusive
  // already; backward ops, split sides and GPU ops are each charged to one
  // (innermost) layer: a container's row adds its descendants'.
  std::vector<LayerRow> out;
  for (const auto& [name, r] : rows) {
    LayerRow total = r;
    const std::string prefix = name + ".";
    for (auto it = rows.lower_bound(prefix); it != rows.end() && it->first.starts_with(prefix); ++it) {
      total.backward_ns += it->second.backward_ns;
      total.cpu_side_ns += it->second.cpu_side_ns;
      total.gpu_ns += it->second.gpu_ns;
    }
    out.push_back(total);
  }
  std::stable_sort(out.begin(), out.end(), [](const LayerRow& a, const LayerRow& b) {
    return a.forward_ns + a.backward_ns > b.forward_ns + b.backward_ns;
  });
  return out;
}

}  // namespace tandem::profile
