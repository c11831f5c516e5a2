#pragma once
// Chrome Trace Event Format (the JSON that chrome://tracing, Perfetto and
// speedscope open):
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
// Zones are "X" (complete) events, counters "C" events, thread names "M"
// metadata. GPU activity (Trace::gpu): device d is process 100 + d ("GPU d"),
// each stream a thread ("stream 7") of kernel/memcpy/memset X events; CUDA
// API calls are X events (cat "cuda_api") on their host thread; a flow arrow
// (ph "s" in the call, ph "f" bp "e" on the op) joins each op to its launch. ts/dur are µs since Trace::begin_ns, written with exactly three
// decimals (ns precision, no rounding through a double).
#include <ostream>
#include <string>

#include "profile/trace.h"

namespace tandem::profile {

void write_chrome_trace(const Trace& trace, std::ostream& os);
std::string chrome_trace_json(const Trace& trace);

// Throws tandem::Error (with the path) if the file cannot be written.
void write_chrome_trace(const Trace& trace, const std::string& path);

}  // namespace tandem::profile
