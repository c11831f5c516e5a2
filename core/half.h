#pragma once
// Portable fp16 / bf16 <-> fp32 conversions (round-to-nearest-even). Scalar
// code on purpose: it runs on x86-64 and aarch64 alike; hot paths convert
// through oneDNN or CUDA instead.
#include <cstdint>
#include <cstring>

namespace tandem {

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    // subnormal: value = man * 2^-24
    float v = float(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_f16(float f) {
  uint32_t u = float_to_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);        // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);       // overflow -> inf
  if (a < 0x38800000u) {                                        // subnormal or zero
    float v = bits_to_float(a) * 16777216.0f;                   // scale by 2^24
    uint32_t m = uint32_t(v);
    float rem = v - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return uint16_t(sign | m);
  }
  uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1u);  // rebias exponent and round
  return uint16_t(sign | (r >> 13));
}

}  // namespace tandem
