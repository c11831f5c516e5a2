#pragma once
// The training-kernel table of a device (ops/train_backend.h).
#include <initializer_list>

#include "ops/train_backend.h"
#include "train/autograd.h"

namespace tandem::train {

// Throws Error::unsupported for a device without training kernels.
const TrainBackend& train_backend(Device device);
// The table of the device all defined `vars` live on; throws Error when they
// are on different devices. `op` names the caller in the error.
const TrainBackend& train_backend(const char* op, std::initializer_list<const Var*> vars);

// An uninitialized f32 tensor on the table's device.
inline Tensor empty_f32(const TrainBackend& be, const Shape& shape) { return be.empty(be.ctx, DType::f32, shape); }
// An uninitialized tensor of `dtype` labelled `layout` (nhwc: 4-D shapes
// only, else Error).
Tensor empty_in(const TrainBackend& be, DType dtype, const Shape& shape, Layout layout);
// An uninitialized tensor of `like`'s dtype and layout (an activation's
// output keeps its input's precision and, 4-D, its layout).
Tensor empty_like(const TrainBackend& be, const Tensor& like, const Shape& shape);
inline Tensor empty_like(const TrainBackend& be, const Var& like, const Shape& shape) {
  return empty_like(be, like.value(), shape);
}

}  // namespace tandem::train
