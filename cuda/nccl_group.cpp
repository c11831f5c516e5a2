#include "cuda/nccl_group.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"

#if TANDEM_HAVE_NCCL
#include <nccl.h>

#include "cuda/dl_symbol.h"
#endif

namespace tandem::cuda {

#if TANDEM_HAVE_NCCL

namespace {

// NCCL is loaded at first use, not linked: it is not part of every CUDA
// installation, and a machine without it still runs everything else (its
// ranks sum through MPI).
struct NcclApi {
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetLastError) GetLastError = nullptr;
};

struct Loaded {
  NcclApi api;
  bool ok = false;
  std::string why_not;
};

Loaded load_once() {
  Loaded r;
  const char* const name = "libnccl.so.2";
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    r.why_not = std::string("cannot load NCCL: ") + (err ? err : name);
    return r;
  }
  std::string& w = r.why_not;
  r.ok = bind_symbol(lib, name, "ncclGetUniqueId", r.api.GetUniqueId, w) &&
      bind_symbol(lib, name, "ncclCommInitRank", r.api.CommInitRank, w) &&
      bind_symbol(lib, name, "ncclCommDestroy", r.api.CommDestroy, w) &&
      bind_symbol(lib, name, "ncclAllReduce", r.api.AllReduce, w) &&
      bind_symbol(lib, name, "ncclGetErrorString", r.api.GetErrorString, w) &&
      bind_symbol(lib, name, "ncclGetLastError", r.api.GetLastError, w);
  return r;
}

const Loaded& loaded() {
  static const Loaded l = load_once();  // one thread-safe initialisation
  return l;
}

const NcclApi& api() {
  const Loaded& l = loaded();
  if (!l.ok) throw Error::unsupported(l.why_not);
  return l.api;
}

// NCCL's words for a failure, with its last message on the communicator
// (which peer, which transport) where there is one.
void check_nccl(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return;
  std::string message = std::string(call) + ": " + api().GetErrorString(r);
  const char* last = api().GetLastError(comm);
  if (last && *last) message += std::string(" (") + last + ")";
  throw Error(message);
}

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (gradient sum)");
  return e;
}

class NcclPending : public NcclGroup::Pending {
 public:
  NcclPending(cudaStream_t compute, cudaEvent_t done) : compute_(compute), done_(done) {}
  ~NcclPending() override { cudaEventDestroy(done_); }
  void wait() override { check_cuda(cudaStreamWaitEvent(compute_, done_, 0), "cudaStreamWaitEvent (gradient sum)"); }

 private:
  cudaStream_t compute_;
  cudaEvent_t done_;  // destroyed at once; CUDA releases it when it completes
};

}  // namespace

struct NcclGroup::State {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // the sums', beside the compute stream
};

bool nccl_available(std::string* why_not) {
  if (why_not) *why_not = loaded().why_not;
  return loaded().ok;
}

std::string nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(api().GetUniqueId(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof id.internal);
}

NcclGroup::NcclGroup(int device, int ranks, int rank, const std::string& id) : s_(std::make_unique<State>()) {
  check(id.size() == sizeof(ncclUniqueId::internal), "an NCCL unique id of " + std::to_string(id.size()) + " bytes");
  s_->device = device;
  set_device(device);
  ncclUniqueId uid;
  std::copy(id.begin(), id.end(), uid.internal);
  check_nccl(api().CommInitRank(&s_->comm, ranks, uid, rank), "ncclCommInitRank");
  // The highest priority: a sum's few blocks start as soon as SMs free up
  // rather than behind a whole backward kernel's grid, so the transfer
  // overlaps the backward as far as it can.
  int least = 0, greatest = 0;
  check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  const cudaError_t made = cudaStreamCreateWithPriority(&s_->stream, cudaStreamNonBlocking, greatest);
  if (made != cudaSuccess) {
    api().CommDestroy(s_->comm);
    check_cuda(made, "cudaStreamCreate (gradient sums)");
  }
}

NcclGroup::~NcclGroup() {
  set_device(s_->device);
  cudaStreamSynchronize(s_->stream);
  api().CommDestroy(s_->comm);
  cudaStreamDestroy(s_->stream);
}

int NcclGroup::device() const { return s_->device; }

std::unique_ptr<NcclGroup::Pending> NcclGroup::sum_async(float* p, size_t n) {
  set_device(s_->device);
  cudaStream_t compute = context(s_->device).stream;
  cudaEvent_t ready = new_event();
  // The bucket was filled on the compute stream: the sum starts after that.
  cudaError_t e = cudaEventRecord(ready, compute);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(s_->stream, ready, 0);
  cudaEventDestroy(ready);
  check_cuda(e, "cudaStreamWaitEvent (gradient sum start)");
  check_nccl(api().AllReduce(p, p, n, ncclFloat32, ncclSum, s_->comm, s_->stream), "ncclAllReduce (gradient sum)",
             s_->comm);
  cudaEvent_t done = new_event();
  auto pending = std::make_unique<NcclPending>(compute, done);
  check_cuda(cudaEventRecord(done, s_->stream), "cudaEventRecord (gradient sum end)");
  return pending;
}

#else

struct NcclGroup::State {};

bool nccl_available(std::string* why_not) {
  if (why_not) *why_not = "this tandem was built without NCCL's header (nccl.h)";
  return false;
}

std::string nccl_unique_id() {
  throw Error::unsupported("this tandem was built without NCCL's header (nccl.h)");
}

NcclGroup::NcclGroup(int, int, int, const std::string&) {
  throw Error::unsupported("this tandem was built without NCCL's header (nccl.h)");
}
NcclGroup::~NcclGroup() = default;
int NcclGroup::device() const { return 0; }
std::unique_ptr<NcclGroup::Pending> NcclGroup::sum_async(float*, size_t) { return nullptr; }

#endif

}  // namespace tandem::cuda
