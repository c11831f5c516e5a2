#include "cuda/element_bits.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace tandem::cuda {

namespace {

template <typename I>
uint64_t saturated(double v) {
  I i = 0;
  if (std::isnan(v))
    i = 0;
  else if (v <= double(std::numeric_limits<I>::min()))
    i = std::numeric_limits<I>::min();
  else if (v >= double(std::numeric_limits<I>::max()))
    i = std::numeric_limits<I>::max();
  else
    i = I(v);
  uint64_t bits = 0;
  std::memcpy(&bits, &i, sizeof(I));
  return bits;
}

}  // namespace

uint64_t element_bits(DType t, double v) {
  switch (t) {
    case DType::f32:
      return float_to_bits(float(v));
    case DType::f16:
      return float_to_f16(float(v));
    case DType::bf16:
      return float_to_bf16(float(v));
    case DType::f64: {
      uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof v);
      return bits;
    }
    case DType::i8:
      return saturated<int8_t>(v);
    case DType::u8:
      return saturated<uint8_t>(v);
    case DType::i32:
      return saturated<int32_t>(v);
    case DType::i64:
      return saturated<int64_t>(v);
    case DType::boolean:
      return v != 0 ? 1 : 0;
  }
  return 0;
}

}  // namespace tandem::cuda
