#pragma once
// The clocks of the profiler.
//
// now_ns(): std::chrono::steady_clock in ns; the time base every Trace is in.
// ticks():  the cheapest monotonic counter the CPU has, read on the hot path
//           (zones, counters). Units are CPU-specific; TickCalibration turns
//           them into now_ns() time when a trace is collected.
//   x86-64:  RDTSC (~12 ns on the dev box vs ~29 ns for steady_clock), used only
//            when CPUID says the TSC is invariant (constant rate, runs in all
//            C-states); otherwise now_ns().
//   aarch64: CNTVCT_EL0, the architectural constant-rate virtual counter.
//   other:   now_ns().
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <x86intrin.h>
#define TANDEM_PROFILE_TICKS_X86 1
#elif defined(__aarch64__)
#define TANDEM_PROFILE_TICKS_ARM64 1
#endif

namespace tandem::profile {

uint64_t now_ns();

// True when ticks() reads a hardware counter (false: it is now_ns()).
bool ticks_are_hardware();

inline uint64_t ticks() {
#if defined(TANDEM_PROFILE_TICKS_X86)
  // Function-local static: detected once, thread-safely, before first use.
  static const bool invariant_tsc = ticks_are_hardware();
  if (invariant_tsc) return __rdtsc();
  return now_ns();
#elif defined(TANDEM_PROFILE_TICKS_ARM64)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return now_ns();
#endif
}

// Maps ticks() values to now_ns() time: ns = ns_ref + (tick - tick_ref) * ns_per_tick.
struct TickCalibration {
  uint64_t tick_ref = 0;
  uint64_t ns_ref = 0;
  double ns_per_tick = 1.0;

  uint64_t to_ns(uint64_t tick) const;
};

// Records the start of the calibration baseline (once per process; later calls
// do nothing). profile::start() calls it.
void mark_tick_baseline();

// Measures the tick rate over the longest baseline available: from
// mark_tick_baseline() to now. Sleeps until the baseline is 10 ms long if it
// is shorter, so the rate is good to ~1e-5 (two clock reads of ~50 ns).
TickCalibration calibrate_ticks();

}  // namespace tandem::profile
