#pragma once
// Tensor files chosen by extension: ".pb" is a serialized onnx::TensorProto
// (the ONNX test-data format), ".npy" a NumPy array (formats/npy.h).
#include <string>

#include "core/tensor.h"

namespace tandem {

// Throws Error naming the file for a missing or malformed file or an unknown
// extension.
Tensor read_tensor_file(const std::string& path);
// `name` goes into the TensorProto of a .pb (ignored for .npy). The tensor
// must be a plain-layout host tensor.
void write_tensor_file(const std::string& path, const Tensor& t, const std::string& name = "");

}  // namespace tandem
