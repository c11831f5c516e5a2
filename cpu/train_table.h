#pragma once
#include "ops/train_backend.h"

namespace tandem::cpu {

// The CPU's training kernels (oneDNN, plain C++ where oneDNN has none).
const TrainBackend& cpu_train_backend();

}  // namespace tandem::cpu
