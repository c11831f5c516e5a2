#include "pipeline/host_tensor_pool.h"

#include <memory>

namespace tandem::pipeline {

namespace {

void free_host(void* p, void* backend) { static_cast<Backend*>(backend)->deallocate_host(p); }

}  // namespace

Tensor HostTensorPool::take(DType dtype, const Shape& shape) {
  const TensorDesc desc{dtype, shape};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = spares_.rbegin(); it != spares_.rend(); ++it)
      if (it->desc() == desc) {
        Tensor t = std::move(*it);
        spares_.erase(std::next(it).base());
        return t;
      }
  }
  const size_t bytes = desc.bytes();
  void* p = backend_.allocate_host(bytes);
  return Tensor(desc, std::make_shared<Storage>(p, bytes, Device::cpu(), free_host, &backend_));
}

void HostTensorPool::give(Tensor t) {
  if (!t.defined()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  spares_.push_back(std::move(t));
  if (spares_.size() > max_spares_) spares_.erase(spares_.begin());
}

}  // namespace tandem::pipeline
