#pragma once
// The profiler's own cost, measured on the machine it runs on: what the
// summary multiplies by the number of events recorded.
namespace tandem::profile {

// ns per recording zone (begin + end) on the calling thread. Runs two short
// sessions of its own (the first takes the buffer chunks, the second is
// timed) and stops: call it before profile::start(), which discards them.
// Throws tandem::Error if a session is running. ~1 ms. 0 when zones are
// compiled out (TANDEM_PROFILE=OFF).
double measure_zone_cost_ns();

}  // namespace tandem::profile
