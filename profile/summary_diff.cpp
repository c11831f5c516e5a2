// Two runs' summaries compared: what `tandem profile-diff A B` prints.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "profile/summary_io.h"

namespace tandem::profile {
namespace {

// "x1.25", or "new"/"gone" when one side is zero.
std::string ratio(double a, double b) {
  if (a == 0 && b == 0) return "-";
  if (a == 0) return "new";
  if (b == 0) return "gone";
  return fmt::format("x{:.2f}", b / a);
}

std::string signed_duration(int64_t ns) {
  return fmt::format("{}{}", ns < 0 ? '-' : '+', format_duration(uint64_t(std::llabs(ns))));
}

std::string split_diff(const ProfileSummary& a, const ProfileSummary& b) {
  std::string out = "thread time (all threads):";
  for (Activity k : kAllActivities)
    out += fmt::format("  {} {:.1f}% -> {:.1f}%", activity_label(k), 100 * a.overall.share(k),
                       100 * b.overall.share(k));
  return out + "\n";
}

}  // namespace

std::vector<StageDiff> diff_stages(const ProfileSummary& a, const ProfileSummary& b) {
  std::map<std::string, StageDiff> by_name;
  for (const StageSummary& st : a.stages) {
    StageDiff& d = by_name[st.name];
    d.name = st.name;
    d.a = st;
  }
  for (const StageSummary& st : b.stages) {
    StageDiff& d = by_name[st.name];
    d.name = st.name;
    d.b = st;
  }
  std::vector<StageDiff> out;
  for (auto& [name, d] : by_name) out.push_back(std::move(d));
  std::stable_sort(out.begin(), out.end(), [](const StageDiff& x, const StageDiff& y) {
    return std::llabs(x.delta_total_ns()) > std::llabs(y.delta_total_ns());
  });
  return out;
}

std::string format_diff(const ProfileSummary& a, const ProfileSummary& b, size_t top) {
  std::string out = fmt::format("wall {} -> {} ({})\n", format_duration(a.wall_ns), format_duration(b.wall_ns),
                                ratio(double(a.wall_ns), double(b.wall_ns)));
  out += split_diff(a, b);
  out += fmt::format("\n  {:<40} {:>10} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7} {:>7}\n", "stage",
                     "total A", "total B", "change", "B/A", "mean A", "mean B", "B/A", "count A", "count B",
                     "share A", "share B");
  const std::vector<StageDiff> diffs = diff_stages(a, b);
  for (size_t i = 0; i < diffs.size() && i < top; ++i) {
    const StageDiff& d = diffs[i];
    const std::string name = shorten_name(d.name, 40);
    out += fmt::format("  {:<40} {:>10} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7} {:>8} {:>8} {:>6.1f}% {:>6.1f}%\n",
                       name, format_duration(d.a.total_ns), format_duration(d.b.total_ns),
                       signed_duration(d.delta_total_ns()), ratio(double(d.a.total_ns), double(d.b.total_ns)),
                       format_duration(d.a.mean_ns), format_duration(d.b.mean_ns),
                       ratio(double(d.a.mean_ns), double(d.b.mean_ns)), d.a.count, d.b.count, 100 * d.a.share,
                       100 * d.b.share);
  }
  if (diffs.size() > top) out += fmt::format("  ... {} more stages\n", diffs.size() - top);
  out += "\nverdict A: " + a.verdict + "\nverdict B: " + b.verdict + "\n";
  return out;
}

}  // namespace tandem::profile
