#include "cuda/nvjpeg/kept_images.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/jpeg_preprocess.h"
#include "cuda/pinned_staging.h"
#include "profile/zone.h"

namespace tandem::cuda {

namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool overlaps(size_t a0, size_t a1, size_t b0, size_t b1) { return a0 < b1 && b0 < a1; }

}  // namespace

KeptImages::KeptImages(int device, size_t capacity)
    : device_(device), capacity_(capacity / kAlign * kAlign) {}

KeptImages::~KeptImages() = default;

std::optional<uint8_t*> KeptImages::place(size_t bytes) {
  if (!enabled_ || bytes == 0) return std::nullopt;
  bytes = round_up(bytes, kAlign);
  if (bytes > capacity_) return std::nullopt;
  if (!ring_) {
    try {
      ring_ = DeviceBuffer(capacity_, "cudaMalloc(kept decoded photos)", {});
    } catch (const Error&) {
      // Another process holds the memory: the photos' regions are decoded
      // again on the CPU, as without keeping.
      enabled_ = false;
      ring_ = DeviceBuffer();
      cudaGetLastError();
      return std::nullopt;
    }
  }
  size_t begin = head_;
  if (begin + bytes > capacity_) begin = 0;
  const size_t end = begin + bytes;
  for (const auto& [b, e] : group_)
    if (overlaps(begin, end, b, e)) return std::nullopt;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    evict(begin, end);
    read_done_.wait(lock, [&] { return !being_read(begin, end); });
  }
  group_.emplace_back(begin, end);
  head_ = end;
  return static_cast<uint8_t*>(ring_.get()) + begin;
}

void KeptImages::evict(size_t begin, size_t end) {
  for (auto it = entries_.begin(); it != entries_.end();)
    it = overlaps(begin, end, it->second.offset, it->second.offset + it->second.bytes)
             ? entries_.erase(it)
             : std::next(it);
}

bool KeptImages::being_read(size_t begin, size_t end) const {
  for (const auto& [b, e] : reading_)
    if (overlaps(begin, end, b, e)) return true;
  return false;
}

uint64_t KeptImages::add(const uint8_t* data, size_t pitch, int width, int height, int orientation,
                         bool gray) {
  Entry e;
  e.offset = size_t(data - static_cast<const uint8_t*>(ring_.get()));
  e.bytes = round_up(pitch * size_t(height), kAlign);
  e.pitch = pitch, e.width = width, e.height = height, e.orientation = orientation, e.gray = gray;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  entries_.emplace(ticket, e);
  return ticket;
}

bool KeptImages::read(uint64_t ticket, Rect upright, std::vector<uint8_t>& out, Rect* clipped,
                      int shrink) {
  return read(
      ticket, upright, shrink,
      [&](int width, int height) {
        out.resize(size_t(width) * size_t(height) * 3);
        return out.data();
      },
      clipped);
}

bool KeptImages::read(uint64_t ticket, Rect upright, int shrink, const Rows& rows, Rect* clipped) {
  TANDEM_ZONE_CAT("read kept photo", "faces");
  if (shrink != 1 && shrink != 2 && shrink != 4 && shrink != 8)
    throw Error("kept photo read: shrink " + std::to_string(shrink) + " is not 1, 2, 4 or 8");
  Entry e;
  Rect r;
  std::pair<size_t, size_t> span;  // the ring's bytes the read takes
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(ticket);
    if (it == entries_.end()) return false;
    e = it->second;
    const bool swap = e.orientation >= 5;
    const int uw = swap ? e.height : e.width, uh = swap ? e.width : e.height;
    r.x = std::clamp(upright.x, 0, uw), r.y = std::clamp(upright.y, 0, uh);
    r.width = (std::clamp(upright.x + upright.width, 0, uw) - r.x) / shrink * shrink;
    r.height = (std::clamp(upright.y + upright.height, 0, uh) - r.y) / shrink * shrink;
    if (r.width <= 0 || r.height <= 0) return false;
    // The stored rows under the upright rectangle: those of two opposite
    // corners, as the walk finds them.
    const StoredRgb walk = stored_rgb(nullptr, e.pitch, e.width, e.height, e.orientation, e.gray);
    auto stored_row = [&](int x, int y) {
      return size_t((walk.base + ptrdiff_t(x) * walk.step_x + ptrdiff_t(y) * walk.step_y) /
                    ptrdiff_t(e.pitch));
    };
    const size_t a = stored_row(r.x, r.y), b = stored_row(r.x + r.width - 1, r.y + r.height - 1);
    span = {e.offset + std::min(a, b) * e.pitch, e.offset + (std::max(a, b) + 1) * e.pitch};
    reading_.push_back(span);
  }
  // However the read ends, the bytes are free for placements again.
  struct Release {
    KeptImages& k;
    std::pair<size_t, size_t> span;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(k.mutex_);
        k.reading_.erase(std::find(k.reading_.begin(), k.reading_.end(), span));
      }
      k.read_done_.notify_all();
    }
  } release{*this, span};

  const int ow = r.width / shrink, oh = r.height / shrink;
  const size_t bytes = size_t(ow) * size_t(oh) * 3;
  thread_local PinnedStaging staging;
  uint8_t* host = staging.get(bytes, "cudaHostAlloc(kept photo staging)");
  set_device(device_);
  // The calling thread's own stream: reads on other threads do not wait
  // for this one. The decode that wrote the image completed before add().
  const cudaStream_t stream = cudaStreamPerThread;
  void* small = nullptr;
  check_cuda(cudaMallocAsync(&small, bytes, stream), "cudaMallocAsync(kept photo region)");
  const StoredRgb img = stored_rgb(static_cast<const uint8_t*>(ring_.get()) + e.offset, e.pitch,
                                   e.width, e.height, e.orientation, e.gray);
  try {
    launch_upright_shrink(img, r.x, r.y, ow, oh, shrink, static_cast<uint8_t*>(small), stream);
    check_cuda(cudaMemcpyAsync(host, small, bytes, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync(kept photo region)");
  } catch (...) {
    // Nothing may still read the ring once Release lets a placement in.
    cudaFreeAsync(small, stream);
    cudaStreamSynchronize(stream);
    throw;
  }
  check_cuda(cudaFreeAsync(small, stream), "cudaFreeAsync(kept photo region)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize(kept photo region)");
  std::memcpy(rows(ow, oh), host, bytes);
  if (clipped) *clipped = r;
  return true;
}

}  // namespace tandem::cuda
