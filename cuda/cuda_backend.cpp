#include "cuda/cuda_backend.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include "cuda/check.h"
#include "cuda/cupti_source.h"
#include "cuda/registry.h"
#include "profile/zone.h"

namespace tandem::cuda {

CudaBackend::CudaBackend(int device) : ctx_(cuda::context(device)) { keep_pool_memory(device); }

std::string CudaBackend::name() const { return "cuda:" + std::to_string(ctx_.device) + " (" + ctx_.name() + ")"; }

bool CudaBackend::supports(const OpDesc& op) const { return find_kernel(op.op_type) != nullptr; }

KernelPlan CudaBackend::prepare(const OpDesc& op) {
  KernelFactory f = find_kernel(op.op_type);
  if (!f) throw Error::unsupported("no CUDA kernel for this op", op.context());
  set_device(ctx_.device);
  try {
    KernelPlan plan = f(op, ctx_);
    if (plan.input_layouts.size() < op.inputs.size()) plan.input_layouts.resize(op.inputs.size(), Layout::plain);
    if (plan.output_layouts.size() < op.outputs.size()) plan.output_layouts.resize(op.outputs.size(), Layout::plain);
    return plan;
  } catch (const Error& e) {
    throw e.with_context(op.context());
  }
}

// Through device_alloc, so the arena, inputs and scratch count in
// device_bytes() with the kernels' own buffers.
void* CudaBackend::allocate(size_t bytes) { return device_alloc(ctx_, bytes); }

void CudaBackend::deallocate(void* ptr) { device_free(ctx_, ptr); }  // never throws: called from destructors

void* CudaBackend::staging(size_t bytes) {
  if (bytes > staging_bytes_) {
    if (staging_) cudaFreeHost(staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    check_cuda(cudaMallocHost(&staging_, bytes), "cudaMallocHost");
    staging_bytes_ = bytes;
  }
  return staging_;
}

void* CudaBackend::allocate_host(size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMallocHost(&p, bytes ? bytes : 64), "cudaMallocHost(pipeline buffer)");
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  pinned_[static_cast<const char*>(p)] = bytes;
  return p;
}

void CudaBackend::deallocate_host(void* ptr) {
  if (!ptr) return;
  {
    std::lock_guard<std::mutex> lock(pinned_mutex_);
    pinned_.erase(static_cast<const char*>(ptr));
  }
  cudaFreeHost(ptr);
}

bool CudaBackend::pinned(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(pinned_mutex_);
  auto it = pinned_.upper_bound(c);
  if (it == pinned_.begin()) return false;
  --it;
  return c + bytes <= it->first + it->second;
}

void CudaBackend::copy_from_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  if (pinned(src, bytes)) {
    // The caller keeps src unchanged until the run that reads it is done.
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_.stream), "cudaMemcpyAsync(H2D)");
    return;
  }
  std::lock_guard<std::mutex> lock(staging_mutex_);
  // The staging buffer is reused (and may be reallocated): wait until the
  // previous copy out of it is done before touching it.
  {
    TANDEM_ZONE_CAT("staging buffer wait", "wait.gpu");
    check_cuda(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
  }
  void* pinned = staging(bytes);
  std::memcpy(pinned, src, bytes);
  check_cuda(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, ctx_.stream), "cudaMemcpyAsync(H2D)");
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  if (pinned(dst, bytes)) {  // one DMA copy, in stream order after the work that made src
    TANDEM_ZONE_CAT("copy to host", "wait.gpu");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream), "cudaMemcpyAsync(D2H)");
    check_cuda(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
    return;
  }
  std::lock_guard<std::mutex> lock(staging_mutex_);
  // The host waits for the work before the copy, then for the copy.
  TANDEM_ZONE_CAT("copy to host", "wait.gpu");
  check_cuda(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
  void* pinned = staging(bytes);
  check_cuda(cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream), "cudaMemcpyAsync(D2H)");
  check_cuda(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
  std::memcpy(dst, pinned, bytes);
}

void CudaBackend::synchronize() {
  TANDEM_ZONE_CAT("cuda synchronize", "wait.gpu");
  check_cuda(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
}

// The pool keeps freed blocks (keep_pool_memory), where cudaMalloc, which
// kernels use for their weights, cannot reach them.
void CudaBackend::release_cached_memory() {
  cudaSetDevice(ctx_.device);
  cudaStreamSynchronize(ctx_.stream);  // frees enqueued on the stream complete first
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, ctx_.device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  cudaGetLastError();  // nothing here is worth reporting over the error that led here
}

namespace {

class CudaGraph final : public Recording {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  void replay() override { check_cuda(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<Recording> CudaBackend::record(const std::function<void()>& body) {
  set_device(ctx_.device);
  check_cuda(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(ctx_.stream, &graph);  // leave capture mode before reporting
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  check_cuda(cudaStreamEndCapture(ctx_.stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(e, "cudaGraphInstantiate");
  return std::make_unique<CudaGraph>(exec, ctx_.stream);
}

CudaBackend& cuda_backend(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<CudaBackend>> backends;
  std::lock_guard<std::mutex> lock(mutex);
  enable_gpu_profiling();
  auto& b = backends[device];
  if (!b) b = std::make_unique<CudaBackend>(device);
  return *b;
}

}  // namespace tandem::cuda
