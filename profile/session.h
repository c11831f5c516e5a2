#pragma once
// RAII tracing for a program run (the CLI's --trace FILE):
//
//   profile::TraceSession trace(path);   // "" = tracing off, does nothing
//   ... work ...
//   trace.finish();   // stop, collect, write; throws on a write error
//
// If finish() was not called, the destructor does it and reports a failure on
// stderr (a destructor cannot throw).
#include <string>

#include "profile/trace.h"
#include "profile/tracer.h"

namespace tandem::profile {

class TraceSession {
 public:
  explicit TraceSession(std::string path, const Options& options = {});
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  bool active() const { return active_; }
  const std::string& path() const { return path_; }

  // Stops tracing, writes the file and returns what was written. Once only:
  // later calls (and an inactive session) return an empty Trace.
  Trace finish();

 private:
  std::string path_;
  bool active_ = false;
};

}  // namespace tandem::profile
