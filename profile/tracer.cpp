// The tracer's registry (every thread's buffer), the chunk pools, the slow
// paths of zone.h, and start/stop/collect.
#include "profile/tracer.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"

#if defined(__linux__)
#include <unistd.h>
#endif

namespace tandem::profile {
namespace detail {
namespace {

// Chunks freed by exited threads, handed to threads that need one. Its own
// mutex: a thread taking a chunk must not wait for a long collect().
template <class Event>
class ChunkPool {
 public:
  Chunk<Event>* take() {  // throws std::bad_alloc
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        Chunk<Event>* c = free_.back();
        free_.pop_back();
        c->next = nullptr;
        return c;
      }
    }
    return new Chunk<Event>;
  }
  void give_back(Chunk<Event>* chain) {
    std::lock_guard lock(mutex_);
    while (chain != nullptr) {
      free_.push_back(std::exchange(chain, chain->next));
    }
  }

 private:
  std::mutex mutex_;
  std::vector<Chunk<Event>*> free_;
};

// State shared by every thread. Never destroyed: threads may still record
// while static destructors run at exit.
struct Registry {
  std::mutex mutex;  // buffers, names, session bookkeeping
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  uint32_t next_tid = 1;
  uint32_t last_session = 0;  // the running one, or the last one stopped
  uint64_t session_begin_tick = 0;
  // Caps of the running session: written by start() before the release store
  // of g_session, read by slow paths after an acquire load of it.
  uint64_t max_zones = 0;
  uint64_t max_counters = 0;
  ChunkPool<ZoneEvent> zone_pool;
  ChunkPool<CounterEvent> counter_pool;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Marks the thread's buffer dead when the thread exits, so the next start()
// can recycle its chunks. Touched only at registration.
struct ExitMark {
  ThreadBuffer* buffer = nullptr;
  ~ExitMark() {
    if (buffer != nullptr) buffer->alive.store(false, std::memory_order_release);
  }
};
thread_local ExitMark t_exit_mark;

ThreadBuffer* this_thread_buffer_or_register() {
  ThreadBuffer*& slot = this_thread_buffer();
  if (slot != nullptr) return slot;
  auto buffer = std::make_unique<ThreadBuffer>();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  buffer->tid = r.next_tid++;
  buffer->os_tid = system_thread_id();
  slot = buffer.get();
  t_exit_mark.buffer = slot;
  r.buffers.push_back(std::move(buffer));
  return slot;
}

template <class Event>
void reset_log(EventLog<Event>& log) {
  log.next = log.limit = nullptr;
  log.current = nullptr;
  log.published.store(0, std::memory_order_relaxed);
  log.dropped.store(0, std::memory_order_relaxed);
}

// Returns the calling thread's buffer ready for `session`, or nullptr when the
// session has ended or the buffer could not be allocated.
ThreadBuffer* prepare_thread(uint32_t session) {
  // Acquire: makes start()'s caps visible before we use them.
  if (g_session.load(std::memory_order_acquire) != session) return nullptr;
  ThreadBuffer* t = this_thread_buffer_or_register();
  if (t->session.load(std::memory_order_relaxed) != session) {
    reset_log(t->zones);
    reset_log(t->counters);
    t->depth = 0;
    // Release: collect() sees the reset logs once it sees the new session.
    t->session.store(session, std::memory_order_release);
  }
  return t;
}

// Moves the log's cursor to the next chunk (reusing the chain, else from the
// pool) and returns its first slot, or counts a drop and returns nullptr.
template <class Event>
Event* advance(EventLog<Event>& log, uint64_t cap, ChunkPool<Event>& pool) {
  const uint64_t used = log.published.load(std::memory_order_relaxed);
  if (used >= cap) {
    log.count_drop();
    return nullptr;
  }
  Chunk<Event>* c = log.current == nullptr ? log.first : log.current->next;
  if (c == nullptr) {
    try {
      c = pool.take();
    } catch (const std::bad_alloc&) {
      log.count_drop();
      return nullptr;
    }
    // Linked before any event in it is published, so collect() can follow it.
    (log.current == nullptr ? log.first : log.current->next) = c;
  }
  log.current = c;
  log.next = c->events;
  log.limit = c->events + std::min<uint64_t>(kChunkEvents, cap - used);
  return log.next++;
}

}  // namespace

ZoneEvent* begin_zone_slow(const SourceLocation* loc, uint32_t session,
                           ThreadBuffer** thread) noexcept {
  ThreadBuffer* t = nullptr;
  try {
    t = prepare_thread(session);
  } catch (const std::bad_alloc&) {
    return nullptr;  // no buffer for this thread: nowhere to count the drop
  }
  if (t == nullptr) return nullptr;
  ZoneEvent* e = t->zones.try_append();
  if (e == nullptr) e = advance(t->zones, registry().max_zones, registry().zone_pool);
  if (e == nullptr) return nullptr;
  open_zone(t, e, loc);
  *thread = t;
  return e;
}

void record_counter_slow(const CounterSite* site, double value, uint32_t session) noexcept {
  ThreadBuffer* t = nullptr;
  try {
    t = prepare_thread(session);
  } catch (const std::bad_alloc&) {
    return;
  }
  if (t == nullptr) return;
  CounterEvent* e = t->counters.try_append();
  if (e == nullptr) e = advance(t->counters, registry().max_counters, registry().counter_pool);
  if (e == nullptr) return;
  e->site = site;
  e->value = value;
  e->tick = ticks();
  t->counters.publish();
}

}  // namespace detail

using namespace detail;

uint64_t system_thread_id() {
#if defined(__linux__)
  return uint64_t(::gettid());
#else
  return 0;
#endif
}

void set_thread_name(std::string_view name) {
  ThreadBuffer* t = this_thread_buffer_or_register();
  std::lock_guard lock(registry().mutex);
  t->name.assign(name);
}

namespace {

// Under the registry mutex, tracing off: frees the buffers of exited threads.
void recycle_exited_threads(Registry& r) {
  auto dead = [&r](std::unique_ptr<ThreadBuffer>& b) {
    if (b->alive.load(std::memory_order_acquire)) return false;
    r.zone_pool.give_back(b->zones.first);
    r.counter_pool.give_back(b->counters.first);
    return true;
  };
  std::erase_if(r.buffers, dead);
}

}  // namespace

void start(const Options& options) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  check(g_session.load(std::memory_order_relaxed) == 0,
        "profile::start: tracing is already running");
  recycle_exited_threads(r);
  mark_tick_baseline();
  r.max_zones = options.max_zones_per_thread;
  r.max_counters = options.max_counters_per_thread;
  if (++r.last_session == 0) r.last_session = 1;  // 0 means "off"
  r.session_begin_tick = ticks();
  g_session.store(r.last_session, std::memory_order_release);
}

void stop() { g_session.store(0, std::memory_order_release); }

bool is_running() { return g_session.load(std::memory_order_relaxed) != 0; }

namespace {

// Interns static records into the Trace's tables while copying events. A
// small direct-mapped cache in front of the hash map: a trace has few sites
// and consecutive events mostly repeat them.
struct Interner {
  Trace& trace;
  std::unordered_map<const SourceLocation*, uint32_t> locations;
  std::unordered_map<std::string_view, uint32_t> counters;  // by name: one track per name
  static constexpr size_t kCache = 64;
  std::pair<const void*, uint32_t> cache[kCache] = {};

  static size_t slot(const void* p) { return (uintptr_t(p) >> 3) % kCache; }

  uint32_t location(const SourceLocation* loc) {
    auto& c = cache[slot(loc)];
    if (c.first == loc) return c.second;
    auto [it, added] = locations.try_emplace(loc, uint32_t(trace.locations.size()));
    if (added) trace.locations.push_back({loc->name, loc->file, loc->line, loc->category});
    c = {loc, it->second};
    return it->second;
  }
  uint32_t counter(const CounterSite* site) {
    auto& c = cache[slot(site)];
    if (c.first == site) return c.second;
    auto [it, added] = counters.try_emplace(site->name, uint32_t(trace.counter_names.size()));
    if (added) trace.counter_names.emplace_back(site->name);
    c = {site, it->second};
    return it->second;
  }
};

// Visits the first `count` events of a chain in order.
template <class Event, class Fn>
void for_each_published(const EventLog<Event>& log, uint64_t count, Fn&& fn) {
  const Chunk<Event>* c = log.first;
  for (uint64_t left = count; left > 0;) {
    const uint64_t n = std::min<uint64_t>(left, kChunkEvents);
    for (uint64_t k = 0; k < n; ++k) fn(c->events[k]);
    left -= n;
    if (left > 0) c = c->next;  // linked before its events were published
  }
}

Track copy_thread(const ThreadBuffer& t, const TickCalibration& cal, uint64_t end_ns,
                  Interner& interner) {
  Track track;
  track.tid = t.tid;
  track.os_tid = t.os_tid;
  track.name = t.name;
  const uint64_t zones = t.zones.published.load(std::memory_order_acquire);
  const uint64_t counters = t.counters.published.load(std::memory_order_acquire);
  track.zones.reserve(zones);
  for_each_published(t.zones, zones, [&](const ZoneEvent& e) {
    const uint64_t end = e.end.load(std::memory_order_relaxed);
    track.zones.push_back({cal.to_ns(e.begin), end == 0 ? end_ns : cal.to_ns(end),
                           interner.location(e.location), e.depth});
  });
  track.counters.reserve(counters);
  for_each_published(t.counters, counters, [&](const CounterEvent& e) {
    track.counters.push_back({cal.to_ns(e.tick), e.value, interner.counter(e.site)});
  });
  track.dropped_zones = t.zones.dropped.load(std::memory_order_relaxed);
  track.dropped_counters = t.counters.dropped.load(std::memory_order_relaxed);
  return track;
}

}  // namespace

Trace collect() {
  const TickCalibration cal = calibrate_ticks();  // may sleep: before the lock
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Trace trace;
  if (r.last_session == 0) return trace;
  trace.begin_ns = cal.to_ns(r.session_begin_tick);
  trace.end_ns = cal.to_ns(ticks());
  Interner interner{trace, {}, {}};
  for (const auto& t : r.buffers) {
    if (t->session.load(std::memory_order_acquire) != r.last_session) continue;
    Track track = copy_thread(*t, cal, trace.end_ns, interner);
    if (track.zones.empty() && track.counters.empty() && track.dropped_zones == 0 &&
        track.dropped_counters == 0)
      continue;
    // Events published after end_ns was read may end later; keep the trace
    // span covering every event.
    for (const ZoneRecord& z : track.zones) trace.end_ns = std::max(trace.end_ns, z.end_ns);
    for (const CounterRecord& c : track.counters) trace.end_ns = std::max(trace.end_ns, c.ts_ns);
    trace.tracks.push_back(std::move(track));
  }
  return trace;
}

}  // namespace tandem::profile
