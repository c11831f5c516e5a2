#pragma once
// Device memory behind tensors. Host memory is 64-byte aligned so that oneDNN
// and vector loads never see a split cache line.
#include <cstddef>
#include <memory>

#include "core/device.h"

namespace tandem {

constexpr size_t kHostAlignment = 64;

// A block of memory on one device. Owns it unless made with `borrow`.
class Storage {
 public:
  using Deleter = void (*)(void* ptr, void* ctx);

  Storage(void* data, size_t bytes, Device device, Deleter deleter, void* ctx)
      : data_(data), bytes_(bytes), device_(device), deleter_(deleter), ctx_(ctx) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Aligned host allocation; throws Error on failure (sizes come from models).
  static std::shared_ptr<Storage> allocate_host(size_t bytes);
  // Wraps memory someone else owns (an arena slice, a pinned buffer).
  static std::shared_ptr<Storage> borrow(void* data, size_t bytes, Device device);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  Deleter deleter_;
  void* ctx_;
};

}  // namespace tandem
