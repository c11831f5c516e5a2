#include "profile/clock.h"

#include <chrono>
#include <thread>

#if defined(TANDEM_PROFILE_TICKS_X86)
#include <cpuid.h>
#endif

namespace tandem::profile {

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

bool ticks_are_hardware() {
#if defined(TANDEM_PROFILE_TICKS_X86)
  // CPUID.80000007H:EDX[8] = invariant TSC (Intel SDM vol. 3 17.17.1, AMD APM).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 8)) != 0;
#elif defined(TANDEM_PROFILE_TICKS_ARM64)
  return true;
#else
  return false;
#endif
}

uint64_t TickCalibration::to_ns(uint64_t tick) const {
  // Signed: an event may be stamped just after the reference point was read.
  const double delta = double(int64_t(tick - tick_ref)) * ns_per_tick;
  return uint64_t(int64_t(ns_ref) + int64_t(delta >= 0 ? delta + 0.5 : delta - 0.5));
}

namespace {

struct TickPair {
  uint64_t tick;
  uint64_t ns;
};

// A (ticks, ns) pair read as close together as possible: the tick is the
// midpoint of two reads around now_ns().
TickPair read_pair() {
  const uint64_t t0 = ticks();
  const uint64_t ns = now_ns();
  const uint64_t t1 = ticks();
  return {t0 + (t1 - t0) / 2, ns};
}

const TickPair& baseline() {
  static const TickPair first = read_pair();
  return first;
}

}  // namespace

void mark_tick_baseline() { (void)baseline(); }

TickCalibration calibrate_ticks() {
  TickCalibration cal;
  if (!ticks_are_hardware()) {
    const uint64_t ns = now_ns();
    return {ns, ns, 1.0};  // ticks() is now_ns(): identity
  }
  const TickPair& first = baseline();
  constexpr uint64_t kMinBaselineNs = 10'000'000;
  const uint64_t elapsed = now_ns() - first.ns;
  if (elapsed < kMinBaselineNs)
    std::this_thread::sleep_for(std::chrono::nanoseconds(kMinBaselineNs - elapsed));
  const TickPair now = read_pair();
  cal.tick_ref = now.tick;
  cal.ns_ref = now.ns;
  cal.ns_per_tick = double(now.ns - first.ns) / double(now.tick - first.tick);
  return cal;
}

}  // namespace tandem::profile
