#pragma once
// Typed element access for the CPU kernels that compute on values (Cast,
// comparisons, reductions, Range) rather than move bytes. Every DType maps to
// a storage type and an arithmetic type: f16/bf16 compute as float, bool as
// bool (stored as one byte, any non-zero byte reads as true).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"

namespace tandem::cpu {

struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };
struct Bool8 { uint8_t v; };

template <class T>
struct Num {
  using type = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <>
struct Num<F16> {
  using type = float;
  static float load(F16 v) { return f16_to_float(v.bits); }
  static F16 store(float v) { return F16{float_to_f16(v)}; }
};
template <>
struct Num<BF16> {
  using type = float;
  static float load(BF16 v) { return bf16_to_float(v.bits); }
  static BF16 store(float v) { return BF16{float_to_bf16(v)}; }
};
template <>
struct Num<Bool8> {
  using type = bool;
  static bool load(Bool8 v) { return v.v != 0; }
  static Bool8 store(bool v) { return Bool8{uint8_t(v ? 1 : 0)}; }
};
template <class T>
using num_t = typename Num<T>::type;

// Element i of a buffer of T, as its arithmetic type (memcpy: no alignment or
// aliasing assumptions).
template <class T>
inline num_t<T> load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * int64_t(sizeof(T)), sizeof(T));
  return Num<T>::load(v);
}
template <class T>
inline void store(void* base, int64_t i, num_t<T> value) {
  T v = Num<T>::store(value);
  std::memcpy(static_cast<char*>(base) + i * int64_t(sizeof(T)), &v, sizeof(T));
}

// Value conversion with defined results where C++ leaves them undefined:
// float -> int saturates and maps NaN to 0; anything -> bool is `!= 0`.
template <class To, class From>
inline To convert_num(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    if (v <= From(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(v);
  } else {
    return static_cast<To>(v);
  }
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the storage type of `t`.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(Tag<float>{});
    case DType::f64: return f(Tag<double>{});
    case DType::f16: return f(Tag<F16>{});
    case DType::bf16: return f(Tag<BF16>{});
    case DType::i8: return f(Tag<int8_t>{});
    case DType::u8: return f(Tag<uint8_t>{});
    case DType::i32: return f(Tag<int32_t>{});
    case DType::i64: return f(Tag<int64_t>{});
    case DType::boolean: return f(Tag<Bool8>{});
  }
  throw Error("unknown dtype");
}

}  // namespace tandem::cpu
