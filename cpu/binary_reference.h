#pragma once
// Plain-layout reference for the broadcasting binary ops (cpu/binary.cpp):
// any of f32, f64, i8, u8, i32, i64; Pow's exponent may have another of
// those dtypes. Also the oracle the oneDNN paths are tested against.
#include <memory>
#include <vector>

#include "core/backend.h"

namespace tandem::cpu {

// Order matches the oneDNN algorithm table in cpu/binary.cpp.
enum class BinaryOp { add, sub, mul, div, max, min, pow };

// Kernel computing output = op(in0, in1[, in2, ...]) folded left to right
// (Max/Min take any number of operands; one operand is copied). Integer
// division by zero throws Error at run time.
std::unique_ptr<Kernel> make_reference_binary(BinaryOp op, const std::vector<TensorDesc>& inputs,
                                              const TensorDesc& output);

}  // namespace tandem::cpu
