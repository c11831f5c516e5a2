#pragma once
// RAII tracing for a program run (the CLI's --trace FILE and --profile DIR):
//
//   profile::TraceSession trace({trace_file, profile_dir});  // both "" = off
//   trace.set_verdict(rule);  // optional: a pipeline's own verdict
//   ... work ...
//   trace.finish();   // stop, collect, write; throws on a write error
//
// --trace FILE writes the Chrome trace alone. --profile DIR writes
// DIR/trace.json (the same trace), DIR/summary.txt and DIR/summary.json
// (summary.h), DIR/report.html (report_html.h) and prints the short summary
// on stderr.
// If finish() was not called, the destructor does it and reports a failure on
// stderr (a destructor cannot throw).
#include <memory>
#include <string>

#include "profile/memory_sampler.h"
#include "profile/summary.h"
#include "profile/trace.h"
#include "profile/tracer.h"

namespace tandem::profile {

struct SessionOutputs {
  std::string trace_file;
  std::string profile_dir;
};

class TraceSession {
 public:
  explicit TraceSession(std::string trace_file, const Options& options = {});
  explicit TraceSession(SessionOutputs outputs, const Options& options = {});
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  bool active() const { return active_; }
  const std::string& path() const { return outputs_.trace_file; }

  // The verdict line of the summary (default: generic_verdict).
  void set_verdict(VerdictRule rule) { verdict_ = std::move(rule); }

  // Stops tracing, writes the files and returns what was traced. Once only:
  // later calls (and an inactive session) return an empty Trace.
  Trace finish();

 private:
  SessionOutputs outputs_;
  VerdictRule verdict_;
  double zone_cost_ns_ = 0;
  bool active_ = false;
  uint64_t os_tid_ = 0;  // the thread that made the session: memory counters go on its row
  std::unique_ptr<MemorySampler> memory_;
};

// Writes DIR/trace.json, summary.txt, summary.json and report.html (creating DIR)
// and returns the summary. rule: null = generic_verdict. Throws tandem::Error
// naming the file that could not be written.
ProfileSummary write_profile(const Trace& trace, const std::string& dir, double zone_cost_ns,
                             const VerdictRule& rule = nullptr);

}  // namespace tandem::profile
