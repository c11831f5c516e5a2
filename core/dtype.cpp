#include "core/dtype.h"

#include "core/error.h"

namespace tandem {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i8: return 1;
    case DType::u8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
    case DType::f64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::f64: return "f64";
  }
  return "?";
}

DType dtype_from_name(std::string_view n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::f32;
  if (n == "f16" || n == "float16" || n == "half" || n == "fp16") return DType::f16;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "i8" || n == "int8") return DType::i8;
  if (n == "u8" || n == "uint8") return DType::u8;
  if (n == "i32" || n == "int32") return DType::i32;
  if (n == "i64" || n == "int64") return DType::i64;
  if (n == "bool" || n == "boolean") return DType::boolean;
  if (n == "f64" || n == "float64" || n == "double") return DType::f64;
  throw Error("unknown dtype '" + std::string(n) + "'");
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

}  // namespace tandem
