#include "train/backend.h"

#include <string>

#include "cpu/train/cpu_train_backend.h"

namespace tandem::train {

const TrainBackend& train_backend(Device device) {
  check_supported(device.is_cpu(), "no training kernels for " + device.str() + " yet");
  return cpu::cpu_train_backend();
}

const TrainBackend& train_backend(const char* op, std::initializer_list<const Var*> vars) {
  const Var* first = nullptr;
  for (const Var* v : vars) {
    if (!v->defined()) continue;
    if (!first) first = v;
    check(v->device() == first->device(),
          std::string(op) + ": inputs on " + first->device().str() + " and " + v->device().str(),
          {"", "", op, shape_str(v->shape())});
  }
  check(first != nullptr, std::string(op) + " without inputs");
  return train_backend(first->device());
}

}  // namespace tandem::train
