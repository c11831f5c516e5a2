// generic_verdict: the limiting stage from the split and the stage table;
// the helpers verdict rules share.
#include <fmt/core.h>

#include "profile/summary.h"
#include "profile/zone_names.h"

namespace tandem::profile {
namespace {

// The stage of that activity with the most self time, or null.
const StageSummary* top_stage(const ProfileSummary& s, Activity a) {
  for (const StageSummary& st : s.stages)  // largest self time first
    if (st.activity == a) return &st;
  return nullptr;
}

}  // namespace

ThreadGroup thread_group(const ProfileSummary& s, const std::string& prefix) {
  ThreadGroup g;
  for (const ThreadSummary& t : s.threads)
    if (t.name.rfind(prefix, 0) == 0) ++g.threads, g.split += t.split;
  return g;
}

const StageSummary* find_stage(const ProfileSummary& s, const std::string& name) {
  for (const StageSummary& st : s.stages)
    if (st.name == name) return &st;
  return nullptr;
}

uint64_t stage_total(const ProfileSummary& s, const std::string& name) {
  const StageSummary* st = find_stage(s, name);
  return st ? st->total_ns : 0;
}

std::string generic_verdict(const ProfileSummary& s) {
  if (s.stages.empty()) return "no zones recorded (a build with TANDEM_PROFILE=OFF records none)";
  // The activity holding the most busy thread time decides the kind of limit.
  Activity most = Activity::compute;
  for (Activity a : kAllActivities)
    if (a != Activity::idle && s.overall[a] > s.overall[most]) most = a;
  const uint64_t busy = s.overall.total() - s.overall[Activity::idle];
  const double pct = busy == 0 ? 0.0 : 100.0 * double(s.overall[most]) / double(busy);
  const StageSummary* stage = top_stage(s, most);
  const std::string name = stage ? stage->name : activity_label(most);
  switch (most) {
    case Activity::wait_gpu:
      return fmt::format("limited by the GPU: threads waited for it {:.0f}% of their busy time ({}): "
                         "try --precision fp16/tf32 or a larger --batch", pct, name);
    case Activity::io:
      return fmt::format("limited by I/O: {:.0f}% of the busy thread time in {}: faster storage, or "
                         "more threads reading", pct, name);
    case Activity::wait_lock: {
      // A thread blocked on a full queue waits for the stage after it; one
      // blocked on an empty queue for the stage before it. Either way the
      // busiest compute stage is the one to speed up.
      const StageSummary* busiest = top_stage(s, Activity::compute);
      const bool full = stage_total(s, kQueueFullZone) > stage_total(s, kQueueEmptyZone);
      return fmt::format(
          "threads waited on each other {:.0f}% of their busy time ({}): the stage {} them is the "
          "limit{}",
          pct, name, full ? "draining" : "feeding",
          busiest ? ": speed up " + busiest->name + " or give it more threads" : "");
    }
    default: {
      const double self_pct = busy == 0 || !stage ? 0.0 : 100.0 * double(stage->self_ns) / double(busy);
      return fmt::format("limited by compute in {} ({:.0f}% of the busy thread time, self): speed it up "
                         "or give it more threads (--threads; bench --per-op lists the slowest ops)",
                         name, self_pct);
    }
  }
}

}  // namespace tandem::profile
