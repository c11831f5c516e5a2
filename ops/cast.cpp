// Cast / CastLike and the ONNX TensorProto dtype codes they carry.
#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {
struct OnnxCode {
  int64_t code;
  DType dtype;
};
constexpr OnnxCode kOnnxCodes[] = {
    {1, DType::f32}, {2, DType::u8},       {3, DType::i8},   {6, DType::i32},  {7, DType::i64},
    {9, DType::boolean}, {10, DType::f16}, {11, DType::f64}, {16, DType::bf16},
};
}  // namespace

DType dtype_from_onnx(int64_t code) {
  for (const OnnxCode& c : kOnnxCodes)
    if (c.code == code) return c.dtype;
  throw Error::unsupported("ONNX data type " + std::to_string(code) + " is not supported");
}

int64_t onnx_code_of(DType t) {
  for (const OnnxCode& c : kOnnxCodes)
    if (c.dtype == t) return c.code;
  throw Error("no ONNX code for dtype " + std::string(dtype_name(t)));
}

namespace {

std::vector<TensorDesc> infer_cast(const InferContext& c) {
  return {TensorDesc{dtype_from_onnx(c.attributes().get_int("to")), c.shape(0)}};
}

std::vector<TensorDesc> infer_cast_like(const InferContext& c) {
  return {TensorDesc{c.inputs[1].dtype, c.shape(0)}};
}

}  // namespace

void register_cast_schemas() {
  register_schema({"Cast", 1, 1, infer_cast});
  register_schema({"CastLike", 2, 2, infer_cast_like});
}

}  // namespace tandem::ops
