#include "cuda/transfer.h"

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/train_context.h"
#include "profile/zone.h"

namespace tandem::cuda {

namespace {

// Pinned buffers host -> device copies pass through, in a ring: a buffer is
// reused once the copy out of it has finished (its event), so up to kSlots
// copies are in flight while the host fills the next one.
class Staging {
 public:
  static constexpr size_t kSlots = 4;

  explicit Staging(Context& c) : c_(c) {}
  ~Staging() {
    for (Slot& s : slots_) {
      if (s.event) cudaEventDestroy(s.event);
      if (s.host) cudaFreeHost(s.host);
    }
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  void upload(void* dst, const void* src, size_t bytes, const ErrorContext& where) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % kSlots;
    if (!s.event)
      check_cuda(cudaEventCreateWithFlags(&s.event, cudaEventDisableTiming), "cudaEventCreate(staging)", where);
    {
      TANDEM_ZONE_CAT("staging buffer wait", "wait.gpu");
      check_cuda(cudaEventSynchronize(s.event), "cudaEventSynchronize(staging)", where);
    }
    if (s.bytes < bytes) {
      if (s.host) cudaFreeHost(s.host);
      s.host = nullptr;
      s.bytes = 0;
      check_cuda(cudaMallocHost(&s.host, bytes), "cudaMallocHost(staging)", where);
      s.bytes = bytes;
    }
    std::memcpy(s.host, src, bytes);
    check_cuda(cudaMemcpyAsync(dst, s.host, bytes, cudaMemcpyHostToDevice, c_.stream), "cudaMemcpyAsync(H2D)",
               where);
    check_cuda(cudaEventRecord(s.event, c_.stream), "cudaEventRecord(staging)", where);
  }

 private:
  struct Slot {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t event = nullptr;  // recorded after the copy out of `host`
  };
  Context& c_;
  std::mutex mu_;
  std::array<Slot, kSlots> slots_{};
  size_t next_ = 0;
};

Staging& staging(Context& c) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Staging>> rings;
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = rings[c.device];
  if (!r) r = std::make_unique<Staging>(c);
  return *r;
}

ErrorContext where(const char* op, const Tensor& t) { return {"", "", op, t.defined() ? t.desc().str() : ""}; }

Context& gpu_of(const Tensor& t, const char* op) {
  TANDEM_CHECK(!t.device().is_cpu(), std::string(op) + " wants a GPU tensor, got one on the host",
               where(op, t));
  Context& c = context(t.device().index);
  return c;
}

}  // namespace

Tensor to_device(const Tensor& host, int device) {
  TANDEM_CHECK(host.defined() && host.device().is_cpu(), "to_device wants a host tensor",
               where("to_device", host));
  TANDEM_CHECK_SUPPORTED(host.layout() == Layout::plain, "to_device copies plain tensors",
                         where("to_device", host));
  Context& c = context(device);
  Tensor t = train::device_empty(c, host.dtype(), host.shape());
  copy_tensor(t, host);
  return t;
}

Tensor to_host(const Tensor& device_tensor) {
  gpu_of(device_tensor, "to_host");
  Tensor t = Tensor::empty(device_tensor.desc());
  copy_tensor(t, device_tensor);
  return t;
}

void copy_tensor(const Tensor& dst, const Tensor& src) {
  ErrorContext w = where("copy_tensor", src);
  TANDEM_CHECK(dst.defined() && src.defined() && dst.desc() == src.desc(),
               "copy between tensors of different descriptions: " +
                   (dst.defined() ? dst.desc().str() : "none") + " and " +
                   (src.defined() ? src.desc().str() : "none"),
               w);
  bool host_src = src.device().is_cpu(), host_dst = dst.device().is_cpu();
  size_t bytes = src.bytes();
  if (host_src && host_dst) {
    if (bytes) std::memcpy(dst.raw(), src.raw(), bytes);
    return;
  }
  Context& c = context(host_src ? dst.device().index : src.device().index);
  TANDEM_CHECK(
      host_src || host_dst || src.device() == dst.device(),
      "copy between " + src.device().str() + " and " + dst.device().str() + " is not supported", w);
  if (!bytes) return;
  if (host_src) {
    staging(c).upload(dst.raw(), src.raw(), bytes, w);
  } else if (host_dst) {
    TANDEM_ZONE_CAT("copy to host", "wait.gpu");
    check_cuda(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync(D2H)",
               w);
    check_cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize", w);
  } else {
    check_cuda(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToDevice, c.stream),
               "cudaMemcpyAsync(D2D)", w);
  }
}

void zero_device_tensor(const Tensor& t) {
  Context& c = gpu_of(t, "zero_device_tensor");
  if (t.bytes())
    check_cuda(cudaMemsetAsync(t.raw(), 0, t.bytes(), c.stream), "cudaMemsetAsync(zero)", where("zero", t));
}

}  // namespace tandem::cuda
