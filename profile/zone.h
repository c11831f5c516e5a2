#pragma once
// Tracing zones and counters, cheap enough to leave in every layer.
//
//   void conv_forward(...) {
//     TANDEM_ZONE("conv_forward");              // this scope is one zone
//     TANDEM_ZONE_CAT("pack weights", "cpu");   // with a category
//     TANDEM_COUNTER("queue depth", q.size());  // one sample of a counter
//   }
//   TANDEM_THREAD_NAME("decoder-3");            // once, in the thread
//
// Compiled in when TANDEM_PROFILE is 1 (CMake option TANDEM_PROFILE; every
// tandem layer gets the definition); otherwise the macros are empty and do
// not evaluate their arguments. Compiled in, nothing is recorded until
// profile::start(): an idle zone costs one relaxed load and a branch. A
// recording zone costs two ticks() reads and a few stores into the thread's
// own buffer: no lock, no allocation (except a new 64K-event chunk), no string.
#include <cstdint>
#include <string_view>

#include "profile/thread_buffer.h"

namespace tandem::profile {

// A scoped zone. Use the macros; the SourceLocation must outlive the program.
// A zone must end on the thread that began it (it writes that thread's buffer).
class Zone {
 public:
  explicit Zone(const SourceLocation* loc) noexcept {
    const uint32_t session = detail::g_session.load(std::memory_order_relaxed);
    if (session != 0) begin(loc, session);
  }
  ~Zone() {
    if (event_ != nullptr) end();
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

 private:
  void begin(const SourceLocation* loc, uint32_t session) noexcept {
    detail::ThreadBuffer* t = detail::this_thread_buffer();
    if (t != nullptr && t->session.load(std::memory_order_relaxed) == session) [[likely]] {
      if (detail::ZoneEvent* e = t->zones.try_append()) [[likely]] {
        detail::open_zone(t, e, loc);
        event_ = e, thread_ = t, session_ = session;
        return;
      }
    }
    event_ = detail::begin_zone_slow(loc, session, &thread_);
    session_ = session;
  }
  void end() noexcept {
    const uint64_t now = ticks();
    // A zone open across stop()+start() belongs to the old session, whose slot
    // the thread may have reused: it must not write.
    if (thread_->session.load(std::memory_order_relaxed) != session_) return;
    event_->end.store(now, std::memory_order_relaxed);
    thread_->depth = event_->depth;
  }

  detail::ZoneEvent* event_ = nullptr;
  detail::ThreadBuffer* thread_ = nullptr;
  uint32_t session_ = 0;
};

// One sample of a counter at the current time. Use TANDEM_COUNTER.
inline void record_counter(const CounterSite* site, double value) noexcept {
  const uint32_t session = detail::g_session.load(std::memory_order_relaxed);
  if (session == 0) return;
  detail::ThreadBuffer* t = detail::this_thread_buffer();
  if (t != nullptr && t->session.load(std::memory_order_relaxed) == session) [[likely]] {
    if (detail::CounterEvent* e = t->counters.try_append()) [[likely]] {
      e->site = site;
      e->value = value;
      e->tick = ticks();
      t->counters.publish();
      return;
    }
  }
  detail::record_counter_slow(site, value, session);
}

// Names the calling thread in traces (copied; any time, tracing on or off).
void set_thread_name(std::string_view name);

}  // namespace tandem::profile

#define TANDEM_PROFILE_CONCAT2(a, b) a##b
#define TANDEM_PROFILE_CONCAT(a, b) TANDEM_PROFILE_CONCAT2(a, b)

#if defined(TANDEM_PROFILE) && TANDEM_PROFILE

// __COUNTER__, not __LINE__: two zones may share a line.
#define TANDEM_ZONE_CAT(name, category) TANDEM_PROFILE_ZONE_AT(name, category, __COUNTER__)
#define TANDEM_PROFILE_ZONE_AT(name, category, n)                                           \
  static constexpr ::tandem::profile::SourceLocation TANDEM_PROFILE_CONCAT(                 \
      tandem_zone_loc_, n){name, __FILE__, uint32_t(__LINE__), category};                   \
  ::tandem::profile::Zone TANDEM_PROFILE_CONCAT(tandem_zone_, n)(                           \
      &TANDEM_PROFILE_CONCAT(tandem_zone_loc_, n))
#define TANDEM_ZONE(name) TANDEM_ZONE_CAT(name, "")
// A zone whose record comes from profile::dynamic_location (run-time names).
#define TANDEM_ZONE_AT(location) \
  ::tandem::profile::Zone TANDEM_PROFILE_CONCAT(tandem_zone_, __COUNTER__)(location)
#define TANDEM_COUNTER(name, value)                                               \
  do {                                                                            \
    static constexpr ::tandem::profile::CounterSite tandem_counter_site{name};    \
    ::tandem::profile::record_counter(&tandem_counter_site, double(value));       \
  } while (0)
#define TANDEM_THREAD_NAME(name) ::tandem::profile::set_thread_name(name)

#else

#define TANDEM_ZONE_CAT(name, category) static_assert(true)
#define TANDEM_ZONE(name) static_assert(true)
#define TANDEM_ZONE_AT(location) \
  do {                           \
    (void)sizeof(location);      \
  } while (0)
// sizeof: the value is not evaluated but still counts as used (no warning).
#define TANDEM_COUNTER(name, value) \
  do {                              \
    (void)sizeof(value);            \
  } while (0)
#define TANDEM_THREAD_NAME(name) \
  do {                           \
    (void)sizeof(name);          \
  } while (0)

#endif
