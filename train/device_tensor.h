#pragma once
// Tensors on any device, for train/: moving a batch or a model to a GPU,
// copying state between devices (checkpoints), zeroing gradients and
// optimizer state where they live. GPU copies go through the CUDA training
// table's stream (cuda/transfer.h); a build without CUDA refuses GPU
// tensors with Error::unsupported.
#include "core/tensor.h"

namespace tandem::train {

// `t` on `device`: t itself when it is there already, else a copy.
Tensor to_device(const Tensor& t, Device device);
// to_device(t, Device::cpu()).
inline Tensor to_host(const Tensor& t) { return to_device(t, Device::cpu()); }
// Copies src's values into dst (one description; any devices). Returns once
// dst may be read on its device.
void copy_tensor(const Tensor& dst, const Tensor& src);
// A tensor of zeros on `device`.
Tensor zeros_on(Device device, DType dtype, const Shape& shape);
// Sets every element of t to zero where it lives.
void zero_tensor(const Tensor& t);

}  // namespace tandem::train
