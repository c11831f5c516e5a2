#pragma once
// ONNX's own shape inference (libonnx), run crash-isolated.
//
// libonnx 1.12's inference functions trust attribute values: a flipped bit in
// a model file (strides = 0, a bad axis) ends in SIGFPE or SIGSEGV inside
// convPoolShapeInference and friends, and catching exceptions does not help.
// So the inference runs in a forked child that sends the inferred types back
// through a pipe; a child that crashes, fails or hangs only costs the
// intermediate shapes, which are advisory anyway (the executor re-infers).
#include <optional>

#include <onnx/onnx_pb.h>

namespace tandem {

// Returns a GraphProto holding only `value_info` and `output` as inferred for
// `model`, or nullopt when inference failed, crashed or took longer than
// `timeout_ms`. `model` is not modified (the child changes its own copy).
std::optional<onnx::GraphProto> infer_onnx_shapes_isolated(const onnx::ModelProto& model,
                                                           int timeout_ms);

}  // namespace tandem
