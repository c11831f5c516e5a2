#pragma once
// Per-thread event storage of the tracer. Internal: zone.h inlines the hot
// path against these types; everything else uses tracer.h and trace.h.
//
// Each thread that records owns one ThreadBuffer with two append-only logs
// (zones, counters). A log is a chain of fixed chunks of kChunkEvents events
// taken from a process-wide pool; a chunk in use is never moved or resized, so
// a zone can keep a pointer to its event and write the end time into it.
// Only the owning thread writes a log; collect() reads the first `published`
// events of it (release/acquire on `published`).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "profile/clock.h"

namespace tandem::profile {

// A zone's static description: one per TANDEM_ZONE site, a constant in the
// binary. Events point at it, so the hot path copies no string.
struct SourceLocation {
  const char* name;
  const char* file;
  uint32_t line;
  const char* category;  // "" when none
};

// A counter's static description: one per TANDEM_COUNTER site.
struct CounterSite {
  const char* name;
};

namespace detail {

// 32 bytes: two zones per cache line.
struct ZoneEvent {
  uint64_t begin;              // ticks()
  std::atomic<uint64_t> end;   // ticks(); 0 while open. Atomic: collect() may read it as it is written
  const SourceLocation* location;
  uint32_t depth;              // zones of this thread open when this one began
};

struct CounterEvent {
  uint64_t tick;
  double value;
  const CounterSite* site;
};

inline constexpr size_t kChunkEvents = size_t(1) << 16;  // 2 MiB of zones, 1.5 MiB of counters

template <class Event>
struct alignas(64) Chunk {
  Event events[kChunkEvents];
  Chunk* next = nullptr;  // chains stay linked across sessions and are reused
};

template <class Event>
struct EventLog {
  // Owner-thread cursor: the next free slot and the end of the current chunk
  // or of the cap, whichever is first.
  Event* next = nullptr;
  Event* limit = nullptr;
  Chunk<Event>* current = nullptr;
  // Read by collect() once `published` says events are there.
  Chunk<Event>* first = nullptr;
  std::atomic<uint64_t> published{0};
  std::atomic<uint64_t> dropped{0};  // events refused by the cap or a failed chunk allocation

  Event* try_append() {
    if (next != limit) [[likely]]
      return next++;
    return nullptr;
  }
  // Single writer: a plain increment, made visible with release.
  void publish() {
    published.store(published.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  void count_drop() {
    dropped.store(dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

// Cache-line aligned: two threads' hot cursors never share a line.
struct alignas(64) ThreadBuffer {
  // Session the logs hold; the owner resets its logs when it sees a new one.
  std::atomic<uint32_t> session{0};
  uint32_t depth = 0;  // owner only: zones open now
  EventLog<ZoneEvent> zones;
  EventLog<CounterEvent> counters;
  // Under the tracer's registry mutex.
  uint32_t tid = 0;  // 1, 2, ... in registration order
  uint64_t os_tid = 0;  // the system's thread id, for matching CUDA API records
  std::string name;
  std::atomic<bool> alive{true};  // false once the thread has exited
};

// 0: tracing off. Otherwise the id of the running session (1, 2, ...).
inline std::atomic<uint32_t> g_session{0};

// The calling thread's buffer, nullptr until it first records or is named.
// initial-exec: one %fs-relative load instead of a __tls_get_addr call under
// -fPIC; valid because tandem is linked into the executable (static layers).
// initial-exec: one instruction per access on the hot path. Not under
// AddressSanitizer: GCC 12 lets UBSan's null check of the variable's
// address read the flags of the `add x@gottpoff(%rip), %reg` it emits, and
// the linker's TLS relaxation turns that add into a `lea`, which sets none;
// the check then reads stale flags and reports a null pointer that is not
// there (tracer.cpp, registering a thread). The default model's access goes
// through a call whose result the check tests itself.
#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_TLS_INITIAL_EXEC
#else
#define TANDEM_TLS_INITIAL_EXEC [[gnu::tls_model("initial-exec")]]
#endif

inline ThreadBuffer*& this_thread_buffer() {
  TANDEM_TLS_INITIAL_EXEC static thread_local ThreadBuffer* buffer = nullptr;
  return buffer;
}

// Fills a fresh slot; the begin time is read last so bookkeeping is not timed.
inline void open_zone(ThreadBuffer* t, ZoneEvent* e, const SourceLocation* loc) {
  e->location = loc;
  e->depth = t->depth++;
  e->end.store(0, std::memory_order_relaxed);
  e->begin = ticks();
  t->zones.publish();
}

// Out of line: registers the thread, resets stale logs, takes the next chunk
// or counts a drop. Returns nullptr (and leaves *thread unset) when dropped.
ZoneEvent* begin_zone_slow(const SourceLocation* loc, uint32_t session,
                           ThreadBuffer** thread) noexcept;
void record_counter_slow(const CounterSite* site, double value, uint32_t session) noexcept;

}  // namespace detail
}  // namespace tandem::profile
