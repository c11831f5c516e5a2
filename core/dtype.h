#pragma once
// Element types understood by every layer. Values follow no external enum on
// purpose: formats/ maps ONNX and TF.js codes onto these.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

enum class DType : uint8_t { f32, f16, bf16, i8, u8, i32, i64, boolean, f64 };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Throws tandem::Error for an unknown name ("f32", "float16", "int64", ...).
DType dtype_from_name(std::string_view name);
bool is_floating(DType t);

// Maps a C++ element type to its DType at compile time.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };

}  // namespace tandem
