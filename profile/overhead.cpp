#include "profile/overhead.h"

#include "profile/clock.h"
#include "profile/tracer.h"
#include "profile/zone.h"

namespace tandem::profile {
namespace {

constexpr int kZones = 1 << 14;  // under one chunk: no allocation in the timed pass

// noinline: the loop is the same code the two passes run.
[[gnu::noinline]] uint64_t record_zones() {
  const uint64_t t0 = now_ns();
  for (int i = 0; i < kZones; ++i) {
    TANDEM_ZONE_CAT("profiler calibration", "");
    asm volatile("" ::: "memory");  // keeps the loop a loop of zones
  }
  return now_ns() - t0;
}

}  // namespace

double measure_zone_cost_ns() {
  start();
  record_zones();
  stop();
  start();
  const uint64_t ns = record_zones();
  stop();
#if defined(TANDEM_PROFILE) && TANDEM_PROFILE
  return double(ns) / kZones;
#else
  (void)ns;
  return 0.0;
#endif
}

}  // namespace tandem::profile
