#include "profile/classify.h"

#include <string>

#include "core/error.h"

namespace tandem::profile {

Activity classify(std::string_view category) {
  if (category == "wait.gpu") return Activity::wait_gpu;
  if (category.starts_with("wait.")) return Activity::wait_lock;
  if (category == "io" || category.starts_with("io.")) return Activity::io;
  return Activity::compute;
}

const char* activity_key(Activity a) {
  switch (a) {
    case Activity::compute: return "compute";
    case Activity::wait_gpu: return "wait_gpu";
    case Activity::io: return "io";
    case Activity::wait_lock: return "wait_lock";
    case Activity::idle: return "idle";
  }
  return "?";
}

Activity activity_from_key(std::string_view key) {
  for (Activity a : kAllActivities)
    if (key == activity_key(a)) return a;
  throw Error("unknown activity '" + std::string(key) + "'");
}

const char* activity_label(Activity a) {
  switch (a) {
    case Activity::compute: return "compute";
    case Activity::wait_gpu: return "wait GPU";
    case Activity::io: return "I/O";
    case Activity::wait_lock: return "lock/queue";
    case Activity::idle: return "idle";
  }
  return "?";
}

uint64_t TimeSplit::total() const {
  uint64_t t = 0;
  for (uint64_t v : ns) t += v;
  return t;
}

double TimeSplit::share(Activity a) const {
  const uint64_t t = total();
  return t == 0 ? 0.0 : double((*this)[a]) / double(t);
}

TimeSplit& TimeSplit::operator+=(const TimeSplit& o) {
  for (size_t i = 0; i < kActivities; ++i) ns[i] += o.ns[i];
  return *this;
}

}  // namespace tandem::profile
