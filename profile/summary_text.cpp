// summary.txt and the short summary printed at the end of a run.
#include <fmt/core.h>

#include <algorithm>

#include "profile/summary_io.h"

namespace tandem::profile {
namespace {

constexpr size_t kStageRows = 40;  // summary.txt; summary.json has every stage
constexpr size_t kShortStageRows = 5;
constexpr size_t kNameWidth = 40;

std::string pct(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

std::string split_header(const char* first) {
  std::string h = fmt::format("  {:<20} {:>10}", first, "lifetime");
  for (Activity a : kAllActivities) h += fmt::format(" {:>10}", activity_label(a));
  return h + "\n";
}

std::string split_row(const std::string& name, const TimeSplit& split) {
  std::string r = fmt::format("  {:<20} {:>10}", shorten_name(name, 20), format_duration(split.total()));
  for (Activity a : kAllActivities) r += fmt::format(" {:>10}", pct(split.share(a)));
  return r + "\n";
}

std::string stage_table(const ProfileSummary& s, size_t rows) {
  std::string out = fmt::format("  {:<{}} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}\n", "stage",
                                kNameWidth, "activity", "count", "total", "self", "mean", "p50", "p99", "share");
  for (size_t i = 0; i < s.stages.size() && i < rows; ++i) {
    const StageSummary& st = s.stages[i];
    out += fmt::format("  {:<{}} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}\n", shorten_name(st.name, kNameWidth),
                       kNameWidth, activity_label(st.activity), st.count, format_duration(st.total_ns),
                       format_duration(st.self_ns), format_duration(st.mean_ns), format_duration(st.p50_ns),
                       format_duration(st.p99_ns), pct(st.share));
  }
  if (s.stages.size() > rows) out += fmt::format("  ... {} more stages in summary.json\n", s.stages.size() - rows);
  return out;
}

std::string overhead_line(const ProfileSummary& s) {
  const Overhead& o = s.overhead;
  const uint64_t thread_time = s.overall.total();
  return fmt::format("profiler overhead: {} events x {:.0f} ns (measured at start) = {}, {:.3f}% of thread time; "
                     "{} zones and {} counter samples dropped\n",
                     o.zones + o.counters, o.ns_per_event, format_duration(uint64_t(o.estimated_ns())),
                     thread_time == 0 ? 0.0 : 100.0 * o.estimated_ns() / double(thread_time), o.dropped_zones,
                     o.dropped_counters);
}

std::string share_of(uint64_t part, uint64_t whole) {
  return pct(whole == 0 ? 0.0 : double(part) / double(whole));
}

// One line: busy and the idle buckets as shares of the wall.
std::string gpu_line(const GpuSummary& g) {
  if (!g.present) return g.note.empty() ? "" : "GPU activity: " + g.note + "\n";
  const GpuTime& t = g.time;
  std::string out = fmt::format(
      "GPU busy {} of the wall (kernels {}, copies only {}); idle {}: sync {}, in CUDA calls {}, CPU not "
      "submitting {}\n",
      share_of(t.busy_ns(), g.span_ns), share_of(t.kernels_ns, g.span_ns), share_of(t.copies_only_ns, g.span_ns),
      share_of(t.idle_ns(), g.span_ns), share_of(t.sync_ns, g.span_ns), share_of(t.in_calls_ns, g.span_ns),
      share_of(t.not_submitting_ns, g.span_ns));
  if (!g.note.empty()) out += "GPU activity: " + g.note + "\n";
  return out;
}

std::string counter_table(const std::vector<CounterSummary>& counters) {
  std::string out = fmt::format("  {:<{}} {:>8} {:>10} {:>10} {:>10} {:>10}\n", "counter", kNameWidth, "samples", "min",
                                "mean", "max", "last");
  for (const CounterSummary& c : counters)
    out += fmt::format("  {:<{}} {:>8} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", shorten_name(c.name, kNameWidth),
                       kNameWidth, c.samples, c.min, c.mean, c.max, c.last);
  return out;
}

// GPU time by the zone that launched it (per layer in training); the top
// kGpuStageRows, the rest in summary.json.
constexpr size_t kGpuStageRows = 12;

std::string gpu_by_stage_table(const GpuSummary& g) {
  if (g.by_stage.empty()) return "";
  std::string out = fmt::format("  {:<{}} {:>8} {:>10} {:>10} {:>7}\n", "GPU time by launching zone", kNameWidth, "ops",
                                "kernels", "copies", "share");
  const double busy = double(std::max<uint64_t>(g.time.busy_ns(), 1));
  for (size_t i = 0; i < g.by_stage.size() && i < kGpuStageRows; ++i) {
    const StageGpuStats& st = g.by_stage[i];
    out += fmt::format("  {:<{}} {:>8} {:>10} {:>10} {:>6.1f}%\n", shorten_name(st.stage, kNameWidth), kNameWidth,
                       st.ops, format_duration(st.kernel_ns), format_duration(st.copy_ns),
                       100.0 * double(st.total_ns()) / busy);
  }
  if (g.by_stage.size() > kGpuStageRows)
    out += fmt::format("  ... {} more in summary.json\n", g.by_stage.size() - kGpuStageRows);
  return out;
}

std::string gpu_tables(const GpuSummary& g) {
  std::string out = fmt::format("GPU: {} streams, {} kernels, {} copies, {} memsets, {} CUDA calls, {} records dropped\n",
                                g.streams, g.kernels, g.copies, g.memsets, g.api_calls, g.dropped);
  out += gpu_line(g);
  out += "(busy: union over streams; idle buckets: profile/gpu_summary.h)\n";
  out += fmt::format("  {:<{}} {:>8} {:>10} {:>10} {:>10} {:>10}\n", "kernel", kNameWidth, "count", "total", "mean",
                     "min", "max");
  for (const KernelStats& k : g.top_kernels)
    out += fmt::format("  {:<{}} {:>8} {:>10} {:>10} {:>10} {:>10}\n", shorten_name(k.name, kNameWidth), kNameWidth,
                       k.count, format_duration(k.total_ns), format_duration(k.mean_ns), format_duration(k.min_ns),
                       format_duration(k.max_ns));
  out += fmt::format("  {:<10} {:>8} {:>12} {:>10} {:>10}\n", "copy", "count", "bytes", "total", "GB/s");
  for (const CopyStats& c : g.copies_by_kind)
    out += fmt::format("  {:<10} {:>8} {:>12} {:>10} {:>10.2f}\n", copy_kind_name(c.kind), c.count, c.bytes,
                       format_duration(c.total_ns), c.gb_per_s);
  out += gpu_by_stage_table(g);
  return out;
}

}  // namespace

std::string shorten_name(const std::string& name, size_t width) {
  if (name.size() <= width) return name;
  const size_t head = (width - 3) / 3;
  return name.substr(0, head) + "..." + name.substr(name.size() - (width - 3 - head));
}

std::string format_duration(uint64_t ns) {
  const double v = double(ns);
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000'000) return fmt::format("{:.3g} us", v / 1e3);
  if (ns < 1000'000'000) return fmt::format("{:.3g} ms", v / 1e6);
  return fmt::format("{:.2f} s", v / 1e9);
}

// Training runs: per layer, the largest kLayerRows (all in summary.json).
constexpr size_t kLayerRows = 16;

std::string layer_rows(const std::vector<LayerRow>& layers) {
  std::string out = fmt::format("  {:<{}} {:>10} {:>10} {:>10} {:>10}\n", "layer", kNameWidth, "forward", "backward",
                                "cpu side", "GPU");
  for (size_t i = 0; i < layers.size() && i < kLayerRows; ++i) {
    const LayerRow& r = layers[i];
    out += fmt::format("  {:<{}} {:>10} {:>10} {:>10} {:>10}\n", shorten_name(r.layer, kNameWidth), kNameWidth,
                       format_duration(r.forward_ns), format_duration(r.backward_ns), format_duration(r.cpu_side_ns),
                       format_duration(r.gpu_ns));
  }
  if (layers.size() > kLayerRows) out += fmt::format("  ... {} more in summary.json\n", layers.size() - kLayerRows);
  return out;
}

std::string format_summary(const ProfileSummary& s) {
  std::string out = fmt::format("tandem profile: wall {}; {} threads, {} zones, {} counter samples\n\n",
                                format_duration(s.wall_ns), s.threads.size(), s.overhead.zones, s.overhead.counters);
  out += "time split, share of each thread's lifetime (first to last event; idle: no zone open)\n";
  out += split_header("thread");
  for (const ThreadSummary& t : s.threads) out += split_row(t.name, t.split);
  out += split_row("all threads", s.overall);
  out += "\nstages (self: less the zones nested in it; share: total / wall, over 100% on several threads at once)\n";
  out += stage_table(s, kStageRows);
  out += "\n";
  if (!s.layers.empty())
    out += "layers (host thread time; cpu side: a split layer's CPU part; GPU: what the layer launched; each "
           "inclusive of nested layers)\n" +
           layer_rows(s.layers) + "\n";
  if (!s.counters.empty()) out += counter_table(s.counters) + "\n";
  if (s.gpu.present) out += gpu_tables(s.gpu) + "\n";
  else out += gpu_line(s.gpu);
  out += overhead_line(s);
  out += "verdict: " + s.verdict + "\n";
  return out;
}

std::string format_summary_short(const ProfileSummary& s) {
  std::string out = fmt::format("profile: wall {}, {} threads; thread time", format_duration(s.wall_ns),
                                s.threads.size());
  for (Activity a : kAllActivities) out += fmt::format(" {} {}", activity_label(a), pct(s.overall.share(a)));
  out += "\n";
  out += stage_table(s, kShortStageRows);
  out += gpu_line(s.gpu);
  out += "verdict: " + s.verdict + "\n";
  return out;
}

}  // namespace tandem::profile
