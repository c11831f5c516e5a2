#include "train/autocast.h"

#include "core/error.h"

namespace tandem::train {

namespace {
thread_local DType t_autocast = DType::f32;
}

DType autocast_dtype() { return t_autocast; }

AutocastGuard::AutocastGuard(DType compute) : previous_(t_autocast) {
  TANDEM_CHECK_SUPPORTED(
      compute == DType::f32 || compute == DType::bf16 || compute == DType::f16,
      "autocast to " + std::string(dtype_name(compute)) + ": f32, bf16 or f16 only");
  t_autocast = compute;
}

AutocastGuard::~AutocastGuard() { t_autocast = previous_; }

}  // namespace tandem::train
