#pragma once
// IDX files, the format of MNIST and Fashion-MNIST (Debian's
// dataset-fashion-mnist ships them gzip-compressed in
// /usr/share/datasets/fashion-mnist): a big-endian header
//   0x00 0x00 <type> <dims>, then <dims> 32-bit extents, then the data.
// Types: 0x08 u8, 0x09 i8, 0x0B i16 (widened to i32), 0x0C i32, 0x0D f32,
// 0x0E f64. Plain or gzip files alike (zlib reads both). A bad magic, an
// unknown type, extents whose product overflows or does not match the data,
// and a truncated or corrupt file are tandem::Errors naming the file.
#include <string>

#include "core/tensor.h"

namespace tandem {

Tensor read_idx(const std::string& path);

}  // namespace tandem
