#pragma once
// ONNX TensorProto <-> tandem Tensor. Everything in a TensorProto is untrusted:
// dims are checked for sign and overflow, the bytes present must match the
// declared shape exactly, and external data must stay inside the model folder.
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/tensor.h"

namespace tandem {

// Converts a tensor; ONNX element types without a tandem DType are widened
// where lossless (INT16/UINT16 -> i32, UINT32 -> i64, UINT64 -> i64 when every
// value fits), else Error. `base_dir` is the folder external data is read
// relative to. Errors name the tensor; callers add the file.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
// Plain-layout host tensor -> TensorProto with raw_data (little-endian).
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

// ONNX TensorProto::DataType code -> the DType tandem holds such elements in
// (after the widening above); nullopt for strings, complex and unknown codes.
std::optional<DType> dtype_from_onnx(int32_t elem_type);
int32_t dtype_to_onnx(DType t);
// "FLOAT16", "STRING", ... or "code N" for codes this libonnx does not know.
std::string onnx_type_name(int32_t elem_type);

}  // namespace tandem
