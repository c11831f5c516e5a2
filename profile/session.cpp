#include "profile/session.h"

#include <cstdio>
#include <utility>

#include "core/error.h"
#include "profile/chrome_trace.h"

namespace tandem::profile {

TraceSession::TraceSession(std::string path, const Options& options) : path_(std::move(path)) {
  if (path_.empty()) return;
  start(options);
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
  stop();
  Trace trace = collect();
  write_chrome_trace(trace, path_);
  return trace;
}

}  // namespace tandem::profile
