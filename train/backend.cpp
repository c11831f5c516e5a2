#include "train/backend.h"

#include <string>

#include "cpu/train_table.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/train_table.h"
#endif

namespace tandem::train {

const TrainBackend& train_backend(Device device) {
  if (device.is_cpu()) return cpu::cpu_train_backend();
#ifdef TANDEM_HAVE_CUDA
  if (device.kind == DeviceKind::cuda) return cuda::cuda_train_backend(device.index);
#endif
  throw Error::unsupported("no training kernels for " + device.str() + " in this build (built without CUDA)");
}

const TrainBackend& train_backend(const char* op, std::initializer_list<const Var*> vars) {
  const Var* first = nullptr;
  for (const Var* v : vars) {
    if (!v->defined()) continue;
    if (!first) first = v;
    TANDEM_CHECK(
        v->device() == first->device(),
        std::string(op) + ": inputs on " + first->device().str() + " and " + v->device().str(),
        {"", "", op, shape_str(v->shape())});
  }
  TANDEM_CHECK(first != nullptr, std::string(op) + " without inputs");
  return train_backend(first->device());
}

Tensor empty_in(const TrainBackend& be, DType dtype, const Shape& shape, Layout layout) {
  Tensor t = be.empty(be.ctx, dtype, shape);
  return layout == Layout::plain ? t : t.with_layout(layout);
}

Tensor empty_like(const TrainBackend& be, const Tensor& like, const Shape& shape) {
  return empty_in(be, like.dtype(), shape, shape.size() == 4 ? like.layout() : Layout::plain);
}

}  // namespace tandem::train
