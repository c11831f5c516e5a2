#pragma once
#include "ops/train_backend.h"

namespace tandem::cuda {

// GPU `device`'s training kernels (cuDNN, cuBLASLt and kernels of our own),
// with the same entries and semantics as the CPU table; created on first use,
// Error when the GPU is absent. Its tensors live on Device::cuda(device).
const TrainBackend& cuda_train_backend(int device);

}  // namespace tandem::cuda
