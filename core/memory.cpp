#include "core/memory.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace tandem {

Storage::~Storage() {
  if (deleter_) deleter_(data_, ctx_);
}

std::shared_ptr<Storage> Storage::allocate_host(size_t bytes) {
  size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded == 0) rounded = kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return std::make_shared<Storage>(p, bytes, Device::cpu(), [](void* d, void*) { std::free(d); },
                                   nullptr);
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t bytes, Device device) {
  return std::make_shared<Storage>(data, bytes, device, nullptr, nullptr);
}

}  // namespace tandem
