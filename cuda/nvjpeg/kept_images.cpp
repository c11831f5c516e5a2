#include "cuda/nvjpeg/kept_images.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/jpeg_preprocess.h"
#include "profile/zone.h"

namespace tandem::cuda {

namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool overlaps(size_t a0, size_t a1, size_t b0, size_t b1) { return a0 < b1 && b0 < a1; }

}  // namespace

KeptImages::KeptImages(int device, size_t capacity)
    : device_(device), capacity_(capacity / kAlign * kAlign) {}

KeptImages::~KeptImages() {
  if (copy_stream_) {
    cudaSetDevice(device_);
    cudaStreamDestroy(copy_stream_);  // status ignored: a destructor cannot report it
  }
}

std::optional<uint8_t*> KeptImages::place(size_t bytes) {
  if (!enabled_ || bytes == 0) return std::nullopt;
  bytes = round_up(bytes, kAlign);
  if (bytes > capacity_) return std::nullopt;
  if (!ring_) {
    try {
      ring_ = DeviceBuffer(capacity_, "cudaMalloc(kept decoded photos)", {});
      check_cuda(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags(kept photo reads)");
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
    std::lock_guard<std::mutex> lock(mutex_);
    evict(begin, end);
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

bool KeptImages::read(uint64_t ticket, Rect upright, std::vector<uint8_t>& out, Rect* clipped) {
  TANDEM_ZONE_CAT("read kept photo", "faces");
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(ticket);
  if (it == entries_.end()) return false;
  const Entry& e = it->second;
  const bool swap = e.orientation >= 5;
  const int uw = swap ? e.height : e.width, uh = swap ? e.width : e.height;
  Rect r;
  r.x = std::clamp(upright.x, 0, uw), r.y = std::clamp(upright.y, 0, uh);
  r.width = std::clamp(upright.x + upright.width, 0, uw) - r.x;
  r.height = std::clamp(upright.y + upright.height, 0, uh) - r.y;
  if (r.width <= 0 || r.height <= 0) return false;
  // The stored rectangle under the upright one: the walk's offsets of two
  // opposite corners, as stored (column, row).
  const StoredRgb walk = stored_rgb(nullptr, e.pitch, e.width, e.height, e.orientation, e.gray);
  auto stored_of = [&](int x, int y) {
    const ptrdiff_t off = walk.base + ptrdiff_t(x) * walk.step_x + ptrdiff_t(y) * walk.step_y;
    return std::make_pair(int(off % ptrdiff_t(e.pitch)) / 3, int(off / ptrdiff_t(e.pitch)));
  };
  const auto [ax, ay] = stored_of(r.x, r.y);
  const auto [bx, by] = stored_of(r.x + r.width - 1, r.y + r.height - 1);
  const int sx = std::min(ax, bx), sy = std::min(ay, by);
  const int sw = std::abs(ax - bx) + 1, sh = std::abs(ay - by) + 1;
  const size_t spitch = size_t(sw) * 3;
  staging_.resize(spitch * size_t(sh));
  set_device(device_);
  const auto* src =
      static_cast<const uint8_t*>(ring_.get()) + e.offset + size_t(sy) * e.pitch + size_t(sx) * 3;
  check_cuda(cudaMemcpy2DAsync(staging_.data(), spitch, src, e.pitch, spitch, size_t(sh),
                               cudaMemcpyDeviceToHost, copy_stream_),
             "cudaMemcpy2DAsync(kept photo region)");
  check_cuda(cudaStreamSynchronize(copy_stream_), "cudaStreamSynchronize(kept photo region)");
  // A stored rectangle shown upright is the upright rectangle: the same
  // walk over the copy.
  const StoredRgb part = stored_rgb(staging_.data(), spitch, sw, sh, e.orientation, e.gray);
  out.resize(size_t(r.width) * size_t(r.height) * 3);
  for (int y = 0; y < r.height; ++y) {
    uint8_t* dst = out.data() + size_t(y) * size_t(r.width) * 3;
    for (int x = 0; x < r.width; ++x) {
      const uint8_t* p =
          part.data + part.base + ptrdiff_t(x) * part.step_x + ptrdiff_t(y) * part.step_y;
      dst[3 * x] = p[0];
      dst[3 * x + 1] = e.gray ? p[0] : p[1];
      dst[3 * x + 2] = e.gray ? p[0] : p[2];
    }
  }
  if (clipped) *clipped = r;
  return true;
}

}  // namespace tandem::cuda
