#pragma once
// TopK's order on the device: elements as unsigned keys whose integer order
// is the output order, and a shared-memory sort of (key, index) entries.
// Keys: larger ranks first. NaN ranks above every number (numpy's sort,
// torch.topk, the CPU kernel), -0 ties +0; for the smallest k the key is
// complemented, so NaN then ranks last. Equal keys go lower index first.
#include <cstdint>
#include <type_traits>

#include "cuda/float_convert.cuh"

namespace tandem::cuda {

// The key type of an element type: as wide as the element (16 bits for f16
// and bf16, so a radix select over them takes two 8-bit passes, not four).
template <typename T>
using KeyOf = std::conditional_t<sizeof(T) == 8, uint64_t,
                                 std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;

// Floats map to their bits, negative ones complemented and positive ones
// with the sign bit set: integer order is then numeric order.
template <typename U>
__device__ __forceinline__ U float_order(U bits, bool nan, bool zero) {
  constexpr U sign = U(U(1) << (sizeof(U) * 8 - 1));
  if (nan) return U(~U(0));
  if (zero) return sign;
  return (bits & sign) ? U(~bits) : U(bits | sign);
}
__device__ __forceinline__ uint32_t order_key(float f) {
  return float_order<uint32_t>(__float_as_uint(f), f != f, f == 0.f);
}
__device__ __forceinline__ uint16_t order_key(__half h) {
  uint16_t b = __half_as_ushort(h);
  return float_order<uint16_t>(b, (b & 0x7fffu) > 0x7c00u, (b & 0x7fffu) == 0);
}
__device__ __forceinline__ uint16_t order_key(__nv_bfloat16 h) {
  uint16_t b = __bfloat16_as_ushort(h);
  return float_order<uint16_t>(b, (b & 0x7fffu) > 0x7f80u, (b & 0x7fffu) == 0);
}
__device__ __forceinline__ uint32_t order_key(int32_t v) { return uint32_t(v) ^ 0x80000000u; }
__device__ __forceinline__ uint64_t order_key(int64_t v) {
  return uint64_t(v) ^ (uint64_t(1) << 63);
}

template <typename T>
__device__ __forceinline__ KeyOf<T> key_of(T v, bool largest) {
  KeyOf<T> k = order_key(v);
  return largest ? k : KeyOf<T>(~k);
}

template <typename K>
struct Entry {
  K key;
  uint32_t index;
};

// Padding past the real entries: after every real one (real indices are
// below 2^32 - 1).
template <typename K>
__device__ __forceinline__ Entry<K> sentinel() {
  return {K(0), 0xffffffffu};
}

template <typename K>
__device__ __forceinline__ bool before(const Entry<K>& a, const Entry<K>& b) {
  return a.key > b.key || (a.key == b.key && a.index < b.index);
}

// Sorts p (a power of two) distinct entries in shared memory into `before`
// order with a bitonic network. Every thread of the block calls it; it
// synchronizes before it returns.
template <typename K>
__device__ void bitonic_sort(Entry<K>* e, int p) {
  __syncthreads();
  for (int size = 2; size <= p; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < p / 2; t += blockDim.x) {
        int i = 2 * t - (t & (stride - 1)), j = i + stride;
        bool up = (i & size) == 0;  // this run sorts in `before` order
        Entry<K> a = e[i], b = e[j];
        if (before(b, a) == up) {
          e[i] = b;
          e[j] = a;
        }
      }
      __syncthreads();
    }
  }
}

// The smallest power of two >= n (n >= 1).
inline int pow2_at_least(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace tandem::cuda
