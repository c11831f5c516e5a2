// summary.txt and the short summary printed at the end of a run.
#include <fmt/core.h>

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
  out += "verdict: " + s.verdict + "\n";
  return out;
}

}  // namespace tandem::profile
