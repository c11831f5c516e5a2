#pragma once
// Device side of cuda/float_types.h: f16 and bf16 elements load as float and
// store from float (round to nearest even), so each kernel computes in f32
// whatever its storage type.
#include <cstdint>
#include <type_traits>

#include "cuda/float_types.h"

namespace tandem::cuda {

template <typename T>
inline constexpr bool kIs16BitFloat = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else {
    static_assert(std::is_same_v<T, float>, "from_float: float, __half or __nv_bfloat16");
    return v;
  }
}

// The type a value is computed in: float for f16 and bf16, its own type
// otherwise (f32, integers, bool).
template <typename T>
using Compute = std::conditional_t<kIs16BitFloat<T>, float, T>;

template <typename T>
__device__ __forceinline__ Compute<T> widen(T v) {
  if constexpr (kIs16BitFloat<T>) return to_float(v);
  else return v;
}

template <typename T>
__device__ __forceinline__ float load(const T* p, int64_t i) { return to_float(p[i]); }
template <typename T>
__device__ __forceinline__ void store(T* p, int64_t i, float v) { p[i] = from_float<T>(v); }

// V neighbouring elements moved as one aligned access (16 bytes: one
// vector load or store), for memory-bound kernels over contiguous runs.
template <int V, typename T>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};
// Elements of T in 16 bytes.
template <typename T>
inline constexpr int kPackOf = int(16 / sizeof(T));

// Calls f(std::integral_constant<int, V>{}): V = kPackOf<T> (one 16-byte
// access) when the caller's run allows it (its length a multiple of V, its
// pointers aligned), else 1.
template <typename T, typename F>
void with_pack(bool packable, F&& f) {
  if (packable)
    f(std::integral_constant<int, kPackOf<T>>{});
  else
    f(std::integral_constant<int, 1>{});
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace tandem::cuda
