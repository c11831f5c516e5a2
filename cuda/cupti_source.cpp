// CUPTI Activity API -> profile::GpuActivity.
//
// CUPTI fills buffers we hand it (from a pre-allocated pool) and gives them
// back full on its own thread, or on ours at the forced flush in stop(). Each
// completed buffer is parsed at once into small records with CUPTI
// timestamps; stop() maps those to the profile clock and groups them by
// device stream.
//
// Clock: CUPTI timestamps (cuptiGetTimestamp, ns) and profile::now_ns() are
// both read at start() and at stop(); a time t maps linearly through the two
// pairs: now0 + (t - cupti0) * (now1 - now0) / (cupti1 - cupti0). On Linux
// both clocks are usually CLOCK_MONOTONIC and the map is the identity; the
// map keeps the trace right where they are not.
#include "cuda/cupti_source.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/context.h"
#include "cuda/cupti_api.h"
#include "profile/clock.h"
#include "profile/gpu_activity.h"
#include "profile/kernel_name.h"
#include "profile/memory_sampler.h"

namespace tandem::cuda {
namespace {

using profile::CopyKind;
using profile::GpuOpKind;

constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr size_t kBuffersAtStart = 4;
constexpr size_t kMaxBuffers = 64;  // 512 MiB: past that CUPTI drops (and counts) records

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

struct RawOp {
  profile::GpuOp op;  // times still in CUPTI's clock
  uint32_t device = 0, stream = 0;
};

struct ClockPair {
  uint64_t cupti = 0, now = 0;
};

CopyKind copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::htod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::dtoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::dtod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::htoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::ptop;
    default: return CopyKind::other;
  }
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string short_api_name(const char* name) {
  std::string s = name != nullptr ? name : "(unknown CUDA call)";
  const size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      s.find_first_not_of("0123456789", v + 2) == std::string::npos)
    s.resize(v);
  return s;
}

class CuptiSource final : public profile::GpuActivitySource {
 public:
  static CuptiSource& instance() {
    static CuptiSource* s = new CuptiSource;  // never destroyed: CUPTI may call back at exit
    return *s;
  }

  void start() override {
    std::lock_guard lock(mutex_);
    reset();
    std::string why;
    api_ = load_cupti(&why);
    if (api_ == nullptr) {
      failure_ = "CUPTI not available: " + why;
      return;
    }
    failure_ = enable();
    if (!failure_.empty()) {
      disable();
      failure_ = "CUPTI not available: " + failure_;
      return;
    }
    running_ = true;
    clock0_ = sample_clock();
  }

  void stop(profile::GpuActivity& out) override {
    std::string flush_error;
    bool was_running = false;
    {
      std::lock_guard lock(mutex_);
      was_running = running_;
      running_ = false;
    }
    if (was_running) {
      disable();
      // Forced: also the buffers of work still in flight; the callbacks take mutex_.
      flush_error = api_->error(api_->activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    }
    std::lock_guard lock(mutex_);
    if (!was_running) {
      out.unavailable = failure_.empty() ? "CUPTI not started" : failure_;
      return;
    }
    const ClockPair clock1 = sample_clock();
    fill(out, clock1);
    if (!flush_error.empty()) out.unavailable = "GPU activity incomplete: " + flush_error;
    reset();
  }

  // CUPTI's callbacks: plain functions, forwarding to the instance.
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    instance().give_buffer(buffer, size, max_records);
  }
  static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                        size_t valid) {
    instance().take_buffer(ctx, stream, buffer, size, valid);
  }

 private:
  CuptiSource() = default;

  // Under mutex_.
  std::string enable() {
    if (!callbacks_registered_) {
      std::string e = api_->error(api_->activity_register_callbacks(buffer_requested, buffer_completed),
                                  "cuptiActivityRegisterCallbacks");
      if (!e.empty()) return e;
      callbacks_registered_ = true;
    }
    // System ids (gettid) are what the profiler's tracks carry.
    std::string e = api_->error(api_->set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM),
                                "cuptiSetThreadIdType");
    if (!e.empty()) return e;
    while (pool_.size() + free_.size() < kBuffersAtStart) {
      free_.push_back(new_buffer());
    }
    for (CUpti_ActivityKind k : kKinds) {
      e = api_->error(api_->activity_enable(k), "cuptiActivityEnable");
      if (!e.empty()) return e + " (activity kind " + std::to_string(int(k)) + ")";
    }
    return "";
  }

  // Errors here leave nothing to undo; the first is kept for the summary.
  void disable() {
    for (CUpti_ActivityKind k : kKinds) {
      std::string e = api_->error(api_->activity_disable(k), "cuptiActivityDisable");
      std::lock_guard lock(error_mutex_);
      if (!e.empty() && late_error_.empty()) late_error_ = e;
    }
  }

  ClockPair sample_clock() const {
    // now_ns() on both sides of the CUPTI read: the pair is good to half the gap.
    const uint64_t before = profile::now_ns();
    uint64_t t = 0;
    const CUptiResult r = api_->get_timestamp(&t);
    const uint64_t after = profile::now_ns();
    if (r != CUPTI_SUCCESS) return {0, 0};
    return {t, before + (after - before) / 2};
  }

  std::unique_ptr<uint8_t[]> new_buffer() {
    // new[] of uint8_t is aligned to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16), past CUPTI's 8.
    return std::unique_ptr<uint8_t[]>(new uint8_t[kBufferBytes]);
  }

  void give_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
    std::lock_guard lock(mutex_);
    *max_records = 0;  // as many as fit
    if (free_.empty() && pool_.size() + free_.size() < kMaxBuffers) {
      try {
        free_.push_back(new_buffer());
      } catch (const std::bad_alloc&) {
      }
    }
    if (free_.empty()) {  // CUPTI drops the records and counts them
      *buffer = nullptr;
      *size = 0;
      return;
    }
    *buffer = free_.back().get();
    *size = kBufferBytes;
    pool_.push_back(std::move(free_.back()));
    free_.pop_back();
  }

  void take_buffer(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
    std::lock_guard lock(mutex_);
    if (api_ != nullptr && buffer != nullptr) {
      CUpti_Activity* record = nullptr;
      while (api_->activity_get_next_record(buffer, valid, &record) == CUPTI_SUCCESS) parse(record);
      size_t dropped = 0;
      if (api_->activity_get_num_dropped_records(ctx, stream, &dropped) == CUPTI_SUCCESS) dropped_ += dropped;
    }
    auto it = std::find_if(pool_.begin(), pool_.end(), [&](const auto& b) { return b.get() == buffer; });
    if (it != pool_.end()) {
      free_.push_back(std::move(*it));
      pool_.erase(it);
    }
  }

  uint32_t intern(const std::string& name) {
    auto [it, added] = name_ids_.try_emplace(name, uint32_t(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }

  uint32_t kernel_name(const char* mangled) {
    auto [it, added] = kernel_ids_.try_emplace(mangled != nullptr ? mangled : "", 0);
    if (added) it->second = intern(profile::short_kernel_name(mangled));
    return it->second;
  }

  uint32_t api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
    const uint64_t key = (uint64_t(domain) << 32) | cbid;
    auto [it, added] = api_ids_.try_emplace(key, 0);
    if (added) {
      const char* name = nullptr;
      if (api_->get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS) name = nullptr;
      it->second = intern(short_api_name(name));
    }
    return it->second;
  }

  // Under mutex_. Records of kinds not enabled are skipped.
  void parse(const CUpti_Activity* record) {
    RawOp raw;
    profile::GpuOp& op = raw.op;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        op.kind = GpuOpKind::kernel;
        op.name = kernel_name(k->name);
        op.correlation = k->correlationId;
        op.start_ns = k->start, op.end_ns = k->end;
        op.grid[0] = uint32_t(k->gridX), op.grid[1] = uint32_t(k->gridY), op.grid[2] = uint32_t(k->gridZ);
        op.block[0] = uint32_t(k->blockX), op.block[1] = uint32_t(k->blockY), op.block[2] = uint32_t(k->blockZ);
        raw.device = k->deviceId, raw.stream = k->streamId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        op.kind = GpuOpKind::memcpy;
        op.copy = copy_kind(m->copyKind);
        op.name = intern(std::string("memcpy ") + profile::copy_kind_name(op.copy));
        op.correlation = m->correlationId;
        op.start_ns = m->start, op.end_ns = m->end;
        op.bytes = m->bytes;
        raw.device = m->deviceId, raw.stream = m->streamId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        op.kind = GpuOpKind::memset;
        op.name = intern("memset");
        op.correlation = m->correlationId;
        op.start_ns = m->start, op.end_ns = m->end;
        op.bytes = m->bytes;
        raw.device = m->deviceId, raw.stream = m->streamId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        profile::GpuApiCall call;
        call.os_tid = a->threadId;
        call.name = api_name(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                         : CUPTI_CB_DOMAIN_DRIVER_API,
                             a->cbid);
        call.correlation = a->correlationId;
        call.start_ns = a->start, call.end_ns = a->end;
        api_calls_.push_back(call);
        return;
      }
      default:
        return;
    }
    // A record CUPTI could not complete (no end time) is counted, not drawn.
    if (op.start_ns == 0 || op.end_ns < op.start_ns) {
      incomplete_++;
      return;
    }
    ops_.push_back(raw);
  }

  // Under mutex_: the session's records, on the profile clock.
  void fill(profile::GpuActivity& out, const ClockPair& clock1) const {
    const ClockPair c0 = clock0_;
    const double scale = clock1.cupti > c0.cupti && clock1.now > c0.now
                             ? double(clock1.now - c0.now) / double(clock1.cupti - c0.cupti)
                             : 1.0;
    auto map = [&](uint64_t t) {
      const double ns = double(c0.now) + (double(t) - double(c0.cupti)) * scale;
      return ns > 0 ? uint64_t(ns) : uint64_t(0);
    };
    out.collected = true;
    out.names = names_;
    out.dropped = dropped_ + incomplete_;
    std::map<std::pair<uint32_t, uint32_t>, size_t> stream_index;
    for (const RawOp& raw : ops_) {
      auto [it, added] = stream_index.try_emplace({raw.device, raw.stream}, out.streams.size());
      if (added) out.streams.push_back({raw.device, raw.stream, {}});
      profile::GpuOp op = raw.op;
      op.start_ns = map(op.start_ns);
      op.end_ns = std::max(op.start_ns, map(op.end_ns));
      out.streams[it->second].ops.push_back(op);
    }
    for (profile::GpuStream& s : out.streams)
      std::sort(s.ops.begin(), s.ops.end(),
                [](const profile::GpuOp& a, const profile::GpuOp& b) { return a.start_ns < b.start_ns; });
    std::sort(out.streams.begin(), out.streams.end(), [](const auto& a, const auto& b) {
      return std::pair(a.device, a.stream) < std::pair(b.device, b.stream);
    });
    out.api_calls.reserve(api_calls_.size());
    for (profile::GpuApiCall call : api_calls_) {
      call.start_ns = map(call.start_ns);
      call.end_ns = std::max(call.start_ns, map(call.end_ns));
      out.api_calls.push_back(call);
    }
    std::lock_guard lock(error_mutex_);
    if (!late_error_.empty()) out.unavailable = "GPU activity incomplete: " + late_error_;
  }

  // Under mutex_: forget a session's records (the names and buffers stay).
  void reset() {
    ops_.clear();
    api_calls_.clear();
    dropped_ = incomplete_ = 0;
    failure_.clear();
    std::lock_guard lock(error_mutex_);
    late_error_.clear();
  }

  std::mutex mutex_;
  const CuptiApi* api_ = nullptr;
  bool callbacks_registered_ = false;
  bool running_ = false;
  std::string failure_;
  mutable std::mutex error_mutex_;
  std::string late_error_;
  ClockPair clock0_;
  std::vector<std::unique_ptr<uint8_t[]>> free_, pool_;  // pool_: lent to CUPTI
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_, kernel_ids_;
  std::unordered_map<uint64_t, uint32_t> api_ids_;
  std::vector<RawOp> ops_;
  std::vector<profile::GpuApiCall> api_calls_;
  uint64_t dropped_ = 0, incomplete_ = 0;
};

}  // namespace

void install_cupti_source() {
  static std::once_flag once;
  std::call_once(once, [] { profile::set_gpu_activity_source(&CuptiSource::instance()); });
}

void enable_gpu_profiling() {
  install_cupti_source();
  profile::set_device_memory_probe([]() -> uint64_t { return device_bytes(); });
}

}  // namespace tandem::cuda
