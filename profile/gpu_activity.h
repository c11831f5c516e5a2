#pragma once
// GPU activity in a trace: what ran on each device stream (kernels, copies,
// memsets) and the host's CUDA API calls that launched it, joined by
// correlation id. The data comes from a GpuActivitySource (the CUDA layer's
// CUPTI reader, cuda/cupti_source.h); profile/ itself knows nothing of CUDA.
// All times are ns on the profile clock (clock.h now_ns()), like every Trace.
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::profile {

enum class GpuOpKind : uint8_t { kernel, memcpy, memset };
enum class CopyKind : uint8_t { none, htod, dtoh, dtod, htoh, ptop, other };
inline constexpr size_t kCopyKinds = 7;

const char* gpu_op_kind_name(GpuOpKind k);  // "kernel", "memcpy", "memset"
const char* copy_kind_name(CopyKind k);     // "", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"

struct GpuOp {
  GpuOpKind kind = GpuOpKind::kernel;
  CopyKind copy = CopyKind::none;  // memcpy only
  uint32_t name = 0;               // index into GpuActivity::names
  uint32_t correlation = 0;        // 0: none
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;              // memcpy, memset
  uint32_t grid[3] = {0, 0, 0};    // kernel; 0 when unknown
  uint32_t block[3] = {0, 0, 0};
};

// One device stream's operations, in start order.
struct GpuStream {
  uint32_t device = 0;
  uint32_t stream = 0;
  std::vector<GpuOp> ops;
};

// A CUDA runtime or driver API call on a host thread.
struct GpuApiCall {
  uint64_t os_tid = 0;  // the system thread id (Track::os_tid)
  uint32_t tid = 0;     // the profiler's thread id (Track::tid), set by attach_gpu_activity
  uint32_t name = 0;    // index into GpuActivity::names ("cudaLaunchKernel", ...)
  uint32_t correlation = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

struct GpuActivity {
  bool collected = false;   // a source recorded for the session
  std::string unavailable;  // a source ran but could not record: why ("CUPTI not available: ...")
  std::vector<std::string> names;
  std::vector<GpuStream> streams;
  std::vector<GpuApiCall> api_calls;
  uint64_t dropped = 0;  // records the source lost (buffers full)
};

// Reads GPU activity for one profiling session. start() and stop() are called
// in pairs, from the thread that runs the session; neither throws: a source
// that cannot record says why in GpuActivity::unavailable.
class GpuActivitySource {
 public:
  virtual ~GpuActivitySource() = default;
  virtual void start() = 0;
  virtual void stop(GpuActivity& out) = 0;
};

// Installs the process's source (nullptr removes it); it must outlive its use.
// Installed while a session runs, it is started at once, so a backend created
// after --profile began still records. Returns the source it replaces.
GpuActivitySource* set_gpu_activity_source(GpuActivitySource* source);

// For TraceSession: starts the installed source (if any) for a session, and
// stops it into `out` (left empty when no source ran). Never throw.
void start_gpu_activity() noexcept;
void stop_gpu_activity(GpuActivity& out) noexcept;

}  // namespace tandem::profile
