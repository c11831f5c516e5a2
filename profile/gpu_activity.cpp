// The installed GPU activity source and its start/stop around a session, and
// joining a source's API calls to the profiler's threads.
#include "profile/gpu_activity.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "profile/trace.h"

namespace tandem::profile {
namespace {

struct SourceSlot {
  std::mutex mutex;
  GpuActivitySource* source = nullptr;
  bool session = false;  // a session wants activity now
  bool started = false;  // `source` was started for it
};

SourceSlot& slot() {
  static SourceSlot* s = new SourceSlot;  // never destroyed: sources may outlive statics
  return *s;
}

}  // namespace

const char* gpu_op_kind_name(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::kernel: return "kernel";
    case GpuOpKind::memcpy: return "memcpy";
    case GpuOpKind::memset: return "memset";
  }
  return "?";
}

const char* copy_kind_name(CopyKind k) {
  switch (k) {
    case CopyKind::none: return "";
    case CopyKind::htod: return "HtoD";
    case CopyKind::dtoh: return "DtoH";
    case CopyKind::dtod: return "DtoD";
    case CopyKind::htoh: return "HtoH";
    case CopyKind::ptop: return "PtoP";
    case CopyKind::other: return "other";
  }
  return "?";
}

GpuActivitySource* set_gpu_activity_source(GpuActivitySource* source) {
  SourceSlot& s = slot();
  std::lock_guard lock(s.mutex);
  GpuActivitySource* previous = s.source;
  if (previous == source) return previous;
  if (s.started) {
    GpuActivity discarded;  // the replaced source's records have no home
    s.source->stop(discarded);
    s.started = false;
  }
  s.source = source;
  if (s.session && s.source != nullptr) {
    s.source->start();
    s.started = true;
  }
  return previous;
}

void start_gpu_activity() noexcept {
  SourceSlot& s = slot();
  std::lock_guard lock(s.mutex);
  s.session = true;
  if (s.source != nullptr && !s.started) {
    s.source->start();
    s.started = true;
  }
}

void stop_gpu_activity(GpuActivity& out) noexcept {
  SourceSlot& s = slot();
  std::lock_guard lock(s.mutex);
  s.session = false;
  if (!s.started) return;  // no GPU was used: nothing to say
  s.started = false;
  s.source->stop(out);
}

Track& add_track(Trace& trace, uint64_t os_tid, std::string name) {
  uint32_t next_tid = 1;
  for (const Track& t : trace.tracks) next_tid = std::max(next_tid, t.tid + 1);
  Track t;
  t.tid = next_tid;
  t.os_tid = os_tid;
  t.name = std::move(name);
  trace.tracks.push_back(std::move(t));
  return trace.tracks.back();
}

void attach_gpu_activity(Trace& trace, GpuActivity gpu) {
  std::unordered_map<uint64_t, uint32_t> tid_of;
  for (const Track& t : trace.tracks)
    if (t.os_tid != 0) tid_of.emplace(t.os_tid, t.tid);
  for (GpuApiCall& call : gpu.api_calls) {
    auto it = tid_of.find(call.os_tid);
    if (it == tid_of.end())
      it = tid_of.emplace(call.os_tid, add_track(trace, call.os_tid, "thread " + std::to_string(call.os_tid) +
                                                                          " (CUDA calls)").tid).first;
    call.tid = it->second;
  }
  trace.gpu = std::move(gpu);
}

}  // namespace tandem::profile
