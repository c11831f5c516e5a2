#include "cuda/context.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "profile/zone.h"

namespace tandem::cuda {

namespace {

constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;  // cuBLASLt's recommendation for Hopper

// TANDEM_CUDA_SYNC on the device about to get its context. A driver that
// refuses the flag is reported, not fatal: the wait still works, as CUDA
// would do it.
void apply_sync_flag(int device) {
  const unsigned flag = sync_flag_from(std::getenv("TANDEM_CUDA_SYNC"));
  if (flag == 0) return;
  if (cudaError_t e = cudaSetDeviceFlags(flag); e != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "tandem: TANDEM_CUDA_SYNC not applied on cuda:%d: %s\n", device,
                 cudaGetErrorString(e));
  }
}

std::unique_ptr<Context> make_context(int device) {
  TANDEM_ZONE_CAT("create CUDA context + cuDNN/cuBLASLt handles", "cuda");
  auto c = std::make_unique<Context>();
  c->device = device;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  apply_sync_flag(device);
  check_cuda(cudaGetDeviceProperties(&c->props, device), "cudaGetDeviceProperties");
  check_cuda(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cudnn(cudnnCreate(&c->cudnn), "cudnnCreate");
  check_cudnn(cudnnSetStream(c->cudnn, c->stream), "cudnnSetStream");
  check_cublas(cublasLtCreate(&c->lt), "cublasLtCreate");
  c->lt_workspace_bytes = kLtWorkspaceBytes;
  check_cuda(cudaMallocAsync(&c->lt_workspace, c->lt_workspace_bytes, c->stream), "cudaMallocAsync(cuBLASLt workspace)");
  return c;
}

}  // namespace

int device_count() {
  // Asked per op (context()); the devices a process sees do not change.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

namespace {
// Sizes of live device_alloc blocks, so frees are counted too.
std::mutex g_alloc_mutex;
std::unordered_map<void*, size_t> g_alloc_sizes;
}  // namespace

Scratch::Scratch(Context& c, size_t bytes) : c_(c), bytes_(bytes) {
  if (bytes) p_ = device_alloc(c, bytes);
}

Scratch::~Scratch() { device_free(c_, p_); }

void* device_alloc(Context& ctx, size_t bytes) {
  void* p = nullptr;
  bytes = bytes ? bytes : 256;
  check_cuda(cudaMallocAsync(&p, bytes, ctx.stream), "cudaMallocAsync");
  {
    std::lock_guard<std::mutex> lock(g_alloc_mutex);
    g_alloc_sizes[p] = bytes;
  }
  note_device_buffer(std::ptrdiff_t(bytes));
  return p;
}

void device_free(Context& ctx, void* p) {
  if (!p) return;
  cudaFreeAsync(p, ctx.stream);
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_alloc_mutex);
    auto it = g_alloc_sizes.find(p);
    if (it == g_alloc_sizes.end()) return;
    bytes = it->second;
    g_alloc_sizes.erase(it);
  }
  note_device_buffer(-std::ptrdiff_t(bytes));
}

void keep_pool_memory(int device) {
  cudaMemPool_t pool;
  check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  uint64_t threshold = UINT64_MAX;
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
             "cudaMemPoolSetAttribute");
}

void upload(Context& ctx, void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx.stream), "cudaMemcpyAsync(weights)");
  check_cuda(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
}

namespace {
std::atomic<size_t> g_buffer_bytes{0}, g_buffer_peak{0};
}  // namespace

size_t device_bytes() { return g_buffer_bytes.load(); }
size_t device_peak_bytes() { return g_buffer_peak.load(); }
void reset_device_peak() { g_buffer_peak.store(g_buffer_bytes.load()); }
void note_device_buffer(std::ptrdiff_t delta) {
  size_t now = g_buffer_bytes.fetch_add(size_t(delta)) + size_t(delta);
  size_t peak = g_buffer_peak.load();
  while (now > peak && !g_buffer_peak.compare_exchange_weak(peak, now)) {
  }
}

void set_device(int device) { check_cuda(cudaSetDevice(device), "cudaSetDevice"); }

unsigned sync_flag_from(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return 0;
  if (v == "spin") return cudaDeviceScheduleSpin;
  if (v == "yield") return cudaDeviceScheduleYield;
  if (v == "block") return cudaDeviceScheduleBlockingSync;
  throw Error("TANDEM_CUDA_SYNC must be auto, spin, yield or block, not '" + v + "'");
}

Context& context(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<Context>> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  int n = device_count();
  if (device < 0 || device >= n)
    throw Error("GPU cuda:" + std::to_string(device) + " is not present (" + std::to_string(n) +
                " CUDA device" + (n == 1 ? "" : "s") + " found)");
  if (contexts.size() <= size_t(device)) contexts.resize(size_t(device) + 1);
  if (!contexts[size_t(device)]) contexts[size_t(device)] = make_context(device);
  set_device(device);
  return *contexts[size_t(device)];
}

}  // namespace tandem::cuda
