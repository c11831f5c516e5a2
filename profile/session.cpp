#include "profile/session.h"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/file_write.h"
#include "profile/chrome_trace.h"
#include "profile/overhead.h"
#include "profile/report_html.h"
#include "profile/summary_io.h"

namespace tandem::profile {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  // Whole or not at all: a full disk or a kill must not leave half a
  // report over the last run's.
  write_file_atomically(path.string(), text);
}

}  // namespace

TraceSession::TraceSession(std::string trace_file, const Options& options)
    : TraceSession(SessionOutputs{std::move(trace_file), ""}, options) {}

TraceSession::TraceSession(SessionOutputs outputs, const Options& options) : outputs_(std::move(outputs)) {
  if (outputs_.trace_file.empty() && outputs_.profile_dir.empty()) return;
  // Measured before the session: its zones are discarded by start().
  if (!outputs_.profile_dir.empty()) zone_cost_ns_ = measure_zone_cost_ns();
  start(options);
  start_gpu_activity();
  os_tid_ = system_thread_id();
  memory_ = std::make_unique<MemorySampler>();
  active_ = true;
}

TraceSession::~TraceSession() {
  if (!active_) return;
  try {
    finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: trace not written: %s\n", e.what());
  }
}

Trace TraceSession::finish() {
  if (!active_) return {};
  active_ = false;
  // Flushed first: the GPU's last records come in while the CPU tracer still runs.
  const std::vector<MemorySample> memory = memory_->stop();
  GpuActivity gpu;
  stop_gpu_activity(gpu);
  stop();
  Trace trace = collect();
  add_memory_counters(trace, memory, os_tid_);
  attach_gpu_activity(trace, std::move(gpu));
  if (!outputs_.trace_file.empty()) write_chrome_trace(trace, outputs_.trace_file);
  if (!outputs_.profile_dir.empty()) {
    const ProfileSummary s = write_profile(trace, outputs_.profile_dir, zone_cost_ns_, verdict_);
    std::fprintf(stderr, "%s(full profile in %s: summary.txt, summary.json, trace.json, report.html)\n",
                 format_summary_short(s).c_str(), outputs_.profile_dir.c_str());
  }
  return trace;
}

ProfileSummary write_profile(const Trace& trace, const std::string& dir, double zone_cost_ns,
                             const VerdictRule& rule) {
  const std::filesystem::path root(dir);
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  check(!ec, "cannot create the profile folder: " + ec.message(), ErrorContext{dir, "", "", ""});
  write_chrome_trace(trace, (root / "trace.json").string());
  ProfileSummary s = summarize(trace, zone_cost_ns);
  s.verdict = rule ? rule(s) : generic_verdict(s);
  write_text(root / "summary.txt", format_summary(s));
  write_text(root / "summary.json", summary_to_json(s));
  write_text(root / "report.html", report_html(trace, s));
  return s;
}

}  // namespace tandem::profile
