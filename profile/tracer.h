#pragma once
// Turning the tracer on and off and taking what it recorded.
//
//   profile::start();
//   ... run; TANDEM_ZONE / TANDEM_COUNTER record in every thread ...
//   profile::stop();
//   profile::Trace trace = profile::collect();
//   profile::write_chrome_trace(trace, "run.json");   // chrome_trace.h
//
// Or profile::TraceSession (session.h), which does all of that in RAII.
#include <cstdint>

#include "profile/trace.h"
#include "profile/zone.h"

namespace tandem::profile {

struct Options {
  // Per thread and session; events past these are counted as dropped, not
  // stored. Memory: 32 B per zone, 24 B per counter sample, taken in chunks of
  // 64K events as a thread needs them (defaults: up to 128 MiB + 24 MiB).
  uint64_t max_zones_per_thread = uint64_t(1) << 22;
  uint64_t max_counters_per_thread = uint64_t(1) << 20;
};

// Starts a new session: events of earlier sessions are discarded (their
// chunks reused). Throws tandem::Error if a session is already running.
void start(const Options& options = {});

// Stops recording; zones already open still record their end. No-op if off.
void stop();

bool is_running();

// The calling thread's system id (Linux gettid; 0 elsewhere): the id CUPTI
// reports with CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, Track::os_tid.
uint64_t system_thread_id();

// A copy of the current session's events (or of the last one, after stop()),
// from every thread that recorded in it, including threads that have exited
// since. Safe while threads record: it takes what they had published.
Trace collect();

}  // namespace tandem::profile
