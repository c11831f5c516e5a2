#include "cuda/async_copy.h"

#include <map>
#include <mutex>
#include <vector>

#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/train_context.h"
#include "profile/zone.h"

namespace tandem::cuda {

namespace {

ErrorContext where(const char* op, const Tensor& t) { return {"", "", op, t.defined() ? t.desc().str() : ""}; }

class Lane;

// One pinned block; `last_copy` is recorded after the last copy into or out
// of it, so the block is handed out again only once that copy has finished.
struct Block {
  Lane* owner = nullptr;
  void* host = nullptr;
  size_t bytes = 0;
  cudaEvent_t last_copy = nullptr;
  bool recorded = false;
};

// Per GPU: the copy stream and the pinned blocks, free ones by size. Lives
// for the process, like the GPU's Context.
class Lane {
 public:
  explicit Lane(int device) {
    set_device(device);
    check_cuda(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate(copy)");
    int shared = 0;
    if (cudaDeviceGetAttribute(&shared, cudaDevAttrPageableMemoryAccessUsesHostPageTables, device) != cudaSuccess) {
      cudaGetLastError();
      shared = 0;
    }
    shared_ = shared != 0;
  }

  cudaStream_t copy_stream() const { return copy_; }
  bool shared() const { return shared_; }

  Tensor pinned(DType dtype, const Shape& shape) {
    TensorDesc d{dtype, shape, Layout::plain};
    Block* b = take(d.bytes() ? d.bytes() : 1);
    auto storage = std::make_shared<Storage>(b->host, d.bytes(), Device::cpu(), give_back, b);
    return Tensor(d, std::move(storage));
  }

  // The block behind a pinned_empty tensor, or null for other memory.
  Block* block_of(const Tensor& t) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = all_.find(t.storage()->data());
    return it == all_.end() ? nullptr : it->second;
  }

  // Marks the block behind `t` (if any) busy until the copy stream's work so far is done.
  void note_copy(const Tensor& t, const ErrorContext& w) {
    if (Block* b = block_of(t)) {
      check_cuda(cudaEventRecord(b->last_copy, copy_), "cudaEventRecord(pinned block)", w);
      b->recorded = true;
    }
  }

 private:
  static void give_back(void*, void* ctx) {
    auto* b = static_cast<Block*>(ctx);
    b->owner->put(b);
  }

  Block* take(size_t bytes) {
    Block* b = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        b = it->second.back();
        it->second.pop_back();
      }
    }
    if (!b) return fresh(bytes);
    if (b->recorded) {
      TANDEM_ZONE_CAT("pinned block wait", "wait.gpu");
      check_cuda(cudaEventSynchronize(b->last_copy), "cudaEventSynchronize(pinned block)");
    }
    return b;
  }

  Block* fresh(size_t bytes) {
    auto b = std::make_unique<Block>();
    b->owner = this;
    b->bytes = bytes;
    check_cuda(cudaMallocHost(&b->host, bytes), "cudaMallocHost(split buffer)");
    if (cudaError_t e = cudaEventCreateWithFlags(&b->last_copy, cudaEventDisableTiming); e != cudaSuccess) {
      cudaFreeHost(b->host);
      check_cuda(e, "cudaEventCreate(pinned block)");
    }
    std::lock_guard<std::mutex> lock(mu_);
    all_[b->host] = b.get();
    return b.release();
  }

  void put(Block* b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[b->bytes].push_back(b);
  }

  cudaStream_t copy_ = nullptr;
  bool shared_ = false;
  std::mutex mu_;
  std::map<void*, Block*> all_;  // by host address; blocks live for the process
  std::map<size_t, std::vector<Block*>> free_;
};

Lane& lane(int device) {
  static std::mutex mutex;
  static std::map<int, Lane*> lanes;  // never freed: pinned blocks may be in flight at exit
  std::lock_guard<std::mutex> lock(mutex);
  Lane*& l = lanes[device];
  if (!l) l = new Lane(device);
  return *l;
}

// A new timing-free event recorded on `stream`, destroyed with its last handle.
std::shared_ptr<void> record_event(cudaStream_t stream, const ErrorContext& w) {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate(split copy)", w);
  std::shared_ptr<void> owned(e, [](void* p) { cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
  check_cuda(cudaEventRecord(e, stream), "cudaEventRecord(split copy)", w);
  return owned;
}

cudaEvent_t event_of(const std::shared_ptr<void>& e) { return static_cast<cudaEvent_t>(e.get()); }

}  // namespace

Tensor pinned_empty(int device, DType dtype, const Shape& shape) { return lane(device).pinned(dtype, shape); }

bool shares_host_memory(int device) { return lane(device).shared(); }

const Tensor& PendingHostCopy::wait() {
  if (event_) {
    TANDEM_ZONE_CAT("split copy wait", "wait.gpu");
    check_cuda(cudaEventSynchronize(event_of(event_)), "cudaEventSynchronize(split copy)", where("wait", host_));
    event_.reset();
  }
  return host_;
}

PendingHostCopy start_copy_to_host(const Tensor& src) {
  ErrorContext w = where("start_copy_to_host", src);
  TANDEM_CHECK(src.defined() && !src.device().is_cpu() && src.layout() == Layout::plain,
               "start_copy_to_host wants a plain GPU tensor", w);
  const int device = src.device().index;
  Context& c = context(device);
  Lane& l = lane(device);
  set_device(device);
  std::shared_ptr<void> ready = record_event(c.stream, w);
  if (l.shared()) return PendingHostCopy(ready, alias_on(src, Device::cpu()));
  Tensor host = pinned_empty(device, src.dtype(), src.shape());
  check_cuda(cudaStreamWaitEvent(l.copy_stream(), event_of(ready), 0), "cudaStreamWaitEvent(copy)", w);
  if (src.bytes())
    check_cuda(cudaMemcpyAsync(host.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToHost, l.copy_stream()),
               "cudaMemcpyAsync(D2H, split)", w);
  l.note_copy(host, w);
  return PendingHostCopy(record_event(l.copy_stream(), w), host);
}

Tensor copy_to_device_async(const Tensor& src, int device) {
  ErrorContext w = where("copy_to_device_async", src);
  TANDEM_CHECK(src.defined() && src.device().is_cpu() && src.layout() == Layout::plain,
               "copy_to_device_async wants a plain host tensor", w);
  Lane& l = lane(device);
  if (l.shared()) return alias_on(src, Device::cuda(device));
  Context& c = context(device);
  set_device(device);
  Tensor dst = train::device_empty(c, src.dtype(), src.shape());
  // The destination comes from the compute stream's pool: the copy stream
  // may write it only after the compute stream has handed it out.
  std::shared_ptr<void> allocated = record_event(c.stream, w);
  check_cuda(cudaStreamWaitEvent(l.copy_stream(), event_of(allocated), 0), "cudaStreamWaitEvent(copy)", w);
  if (src.bytes())
    check_cuda(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyHostToDevice, l.copy_stream()),
               "cudaMemcpyAsync(H2D, split)", w);
  std::shared_ptr<void> done = record_event(l.copy_stream(), w);
  check_cuda(cudaStreamWaitEvent(c.stream, event_of(done), 0), "cudaStreamWaitEvent(compute)", w);
  l.note_copy(src, w);
  return dst;
}

void synchronize(int device) {
  Context& c = context(device);
  check_cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize(split timing)");
}

Tensor alias_on(const Tensor& t, Device device) {
  TANDEM_CHECK(t.defined() && t.layout() == Layout::plain, "alias_on wants a plain tensor");
  // The alias's storage holds a reference to the original's until it goes.
  auto keep = new std::shared_ptr<Storage>(t.storage());
  auto storage = std::make_shared<Storage>(t.raw(), t.bytes(), device,
                                           [](void*, void* ctx) { delete static_cast<std::shared_ptr<Storage>*>(ctx); },
                                           keep);
  return Tensor(t.desc(), std::move(storage));
}

}  // namespace tandem::cuda
