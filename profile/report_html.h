#pragma once
// report.html: the profile of one run as a self-contained page (inline CSS and
// JS, nothing fetched): a zoomable timeline with one lane per track, an
// activity strip for the whole run, and summary.txt's tables.
//
// The page's data is one JSON object (report_data) in a
// <script type="application/json" id="tandem-data"> tag:
//   {"format": "tandem-profile-report", "version": 1, "wall_ns": N,
//    "activities": [{"key", "label"}],          // classify.h's order
//    "names": [...], "categories": [...],       // per location
//    "location_activity": [i, ...],             // index into activities
//    "tracks": [{"kind": "thread" | "gpu_stream", "name", "id",
//                "begin_ns", "end_ns",           // lifetime, from the trace's begin
//                "zones": {"begin": [...], "dur": [...], "loc": [...], "depth": [...]}}],
//    "zones_total": N, "zones_kept": N, "zone_cap": N, "min_kept_ns": N,
//    "strip": {"bin_ns": N, "ns": [[per activity] per bin]},  // thread time per activity
//    "summary": {summary.json}}
// Times are integer ns since Trace::begin_ns. GPU streams become tracks of
// kind "gpu_stream" with the same zone arrays; the page lays out any kind.
#include <cstddef>
#include <string>

#include "profile/summary.h"
#include "profile/trace.h"

namespace tandem::profile {

struct ReportOptions {
  // Above this many zones in all, the shortest are left out of the timeline
  // (the page says how many); the tables and the strip still count them all.
  size_t zone_cap = 200'000;
  size_t strip_bins = 600;
};

// The JSON above, with every '<' written as \u003c so no zone name can end
// the script tag it is embedded in.
std::string report_data(const Trace& trace, const ProfileSummary& s, const ReportOptions& options = {});

// The whole page.
std::string report_html(const Trace& trace, const ProfileSummary& s, const ReportOptions& options = {});

}  // namespace tandem::profile
