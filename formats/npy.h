#pragma once
// NumPy .npy files, format versions 1.0, 2.0 and 3.0, little-endian only.
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//
// dtypes: '<f4' f32, '<f2' f16, '<f8' f64, '|i1' i8, '|u1' u8, '<i4' i32,
// '<i8' i64, '|b1' bool; '<i2'/'<u2' are widened to i32 and '<u4' to i64.
// Fortran order, big-endian data, object arrays and any malformed header are
// a tandem::Error naming the file.
#include <string>

#include "core/tensor.h"

namespace tandem {

Tensor read_npy(const std::string& path);
// Decodes .npy bytes; `path` is only for error messages.
Tensor parse_npy(const std::string& bytes, const std::string& path);
// Writes a plain-layout host tensor as version 1.0 (2.0 if the header needs
// it). bf16 has no NumPy dtype: Error.
void write_npy(const std::string& path, const Tensor& t);
std::string encode_npy(const Tensor& t);

}  // namespace tandem
