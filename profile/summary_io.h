#pragma once
// A ProfileSummary written out: summary.txt (for people), the short form
// printed at the end of a run, summary.json (for scripts and profile-diff),
// and the comparison of two runs.
//
// summary.json (all times integer ns):
//   {"format": "tandem-profile-summary", "version": 1, "wall_ns": N,
//    "split": {"compute": N, "wait_gpu": N, "io": N, "wait_lock": N, "idle": N},
//    "threads": [{"name", "tid", "begin_ns", "end_ns", "split": {...}}],
//    "stages": [{"name", "activity", "count", "total_ns", "self_ns", "mean_ns",
//                "p50_ns", "p99_ns", "max_ns", "share"}],
//    "overhead": {"zones", "counters", "dropped_zones", "dropped_counters",
//                 "ns_per_event", "estimated_ns"},
//    "gpu": {"present", "note"; when present also "span_ns", "busy_ns",
//            "time": {"kernels_ns", "copies_only_ns", "sync_ns", "in_calls_ns",
//                     "not_submitting_ns"},
//            "counts": {"streams", "kernels", "copies", "memsets", "api_calls", "dropped"},
//            "top_kernels": [{"name", "count", "total_ns", "mean_ns", "min_ns", "max_ns"}],
//            "copies": [{"kind", "count", "bytes", "total_ns", "gb_per_s"}]},
//    "verdict": "..."}
// Reading back (profile-diff) takes the stages and splits; "gpu" is not read.
#include <string>

#include "profile/summary.h"

namespace tandem::profile {

// "12.3 ms", "4.56 s", "789 ns": three significant digits or so.
std::string format_duration(uint64_t ns);

// At most `width` (>= 8) characters: the head and the tail of a long name with
// "..." between, since op zones ("Conv /layer2/layer2.1/conv2/Conv") differ at the end.
std::string shorten_name(const std::string& name, size_t width);

std::string format_summary(const ProfileSummary& s);
// A few lines: the overall split, the top stages, the verdict.
std::string format_summary_short(const ProfileSummary& s);

std::string summary_to_json(const ProfileSummary& s);
// Throws tandem::Error (naming `source`) on text that is not a summary.
ProfileSummary summary_from_json(const std::string& text, const std::string& source = "");
// A summary.json, or the summary.json of a profile folder.
ProfileSummary read_summary(const std::string& path);

// One stage in two runs; a stage missing from a run has count 0 there.
struct StageDiff {
  std::string name;
  StageSummary a, b;
  int64_t delta_total_ns() const { return int64_t(b.total_ns) - int64_t(a.total_ns); }
};
// Every stage of either run, largest absolute change of total time first.
std::vector<StageDiff> diff_stages(const ProfileSummary& a, const ProfileSummary& b);
// The table `tandem profile-diff` prints; `top`: at most this many stages.
std::string format_diff(const ProfileSummary& a, const ProfileSummary& b, size_t top = 40);

}  // namespace tandem::profile
