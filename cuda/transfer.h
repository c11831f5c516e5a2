#pragma once
// Tensors between the host and a GPU for training, on the GPU's stream (so
// copies are ordered with the training kernels). Device tensors come from the
// training table's allocator (stream-ordered pool).
// Host -> device goes through pinned staging buffers: the host bytes are
// copied into one and the DMA is enqueued, so the call returns without
// waiting for the GPU and the host tensor may be reused at once (a data
// loader's next batch). Device -> host waits for the stream: the caller is
// about to read the values.
#include "core/tensor.h"

namespace tandem::cuda {

// A new tensor on GPU `device` holding `host`'s values (plain layout).
Tensor to_device(const Tensor& host, int device);
// A new host tensor holding a device tensor's values; waits for its stream.
Tensor to_host(const Tensor& device_tensor);
// Copies between two tensors of one description; either may be on the host
// or on a GPU (both GPUs the same). Returns after the copy when `dst` is on
// the host, else once it is enqueued.
void copy_tensor(const Tensor& dst, const Tensor& src);
// Sets every byte of a device tensor to zero, enqueued on its GPU's stream.
void zero_device_tensor(const Tensor& t);

}  // namespace tandem::cuda
