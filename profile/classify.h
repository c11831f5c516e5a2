#pragma once
// What a thread is doing, decided from zone categories. This file is the one
// place the category vocabulary is defined:
//
//   category                         activity
//   "wait.gpu"                       wait_gpu   host blocked on the device (stream
//                                               synchronize, a copy to the host)
//   "wait.lock", "wait.queue",       wait_lock  blocked on another host thread (a
//   any other "wait.*"                          full or empty queue, a lock)
//   "io", "io.*"                     io         file reads and writes
//   anything else ("" included:      compute    op zones ("op"), pipeline stages,
//   "op", "graph", "tag", ...)                  graph runs
//
// At any instant a thread's time belongs to the innermost zone open on it:
// a "wait.gpu" zone inside "plan.run" is waiting, not compute. An instant
// with no zone open is idle (the thread ran code nobody zoned, or slept).
// Wait zones go around the blocking call only, never around a fast path, so
// a thread that does not block records nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tandem::profile {

enum class Activity : uint8_t { compute, wait_gpu, io, wait_lock, idle };
inline constexpr size_t kActivities = 5;
inline constexpr std::array<Activity, kActivities> kAllActivities = {
    Activity::compute, Activity::wait_gpu, Activity::io, Activity::wait_lock, Activity::idle};

Activity classify(std::string_view category);

// "compute", "wait_gpu", "io", "wait_lock", "idle": summary.json's keys.
const char* activity_key(Activity a);
Activity activity_from_key(std::string_view key);  // throws tandem::Error on an unknown key
// For people: "compute", "wait GPU", "I/O", "lock/queue", "idle".
const char* activity_label(Activity a);

// Time per activity.
struct TimeSplit {
  std::array<uint64_t, kActivities> ns{};

  uint64_t& operator[](Activity a) { return ns[size_t(a)]; }
  uint64_t operator[](Activity a) const { return ns[size_t(a)]; }
  uint64_t total() const;
  double share(Activity a) const;  // of total(); 0 when total() is 0
  TimeSplit& operator+=(const TimeSplit& o);
};

}  // namespace tandem::profile
