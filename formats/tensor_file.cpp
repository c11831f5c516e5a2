#include "formats/tensor_file.h"

#include <filesystem>

#include <onnx/onnx_pb.h>

#include "formats/file_bytes.h"
#include "formats/npy.h"
#include "formats/onnx/tensor_proto.h"

namespace tandem {

namespace {

enum class TensorFormat { pb, npy };

TensorFormat format_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".pb") return TensorFormat::pb;
  if (ext == ".npy") return TensorFormat::npy;
  throw Error("unknown tensor file extension '" + ext + "' (want .pb or .npy)",
              {path, "", "", ""});
}

Tensor read_pb(const std::string& path) {
  // A TensorProto is one protobuf message, so it is under 2 GiB; larger
  // tensors live in external data, which tensor_from_proto reads.
  std::string bytes = read_file_bytes(path, INT32_MAX);
  onnx::TensorProto proto;
  check(!bytes.empty() && proto.ParseFromArray(bytes.data(), int(bytes.size())),
        "not a serialized ONNX TensorProto", {path, "", "", ""});
  return tensor_from_proto(proto, std::filesystem::path(path).parent_path().string());
}

}  // namespace

Tensor read_tensor_file(const std::string& path) {
  try {
    return format_of(path) == TensorFormat::pb ? read_pb(path) : read_npy(path);
  } catch (const Error& e) {
    throw e.with_context({path, "", "", ""});
  }
}

void write_tensor_file(const std::string& path, const Tensor& t, const std::string& name) {
  try {
    if (format_of(path) == TensorFormat::npy) return write_npy(path, t);
    std::string bytes;
    check(tensor_to_proto(t, name).SerializeToString(&bytes), "TensorProto serialization failed");
    write_file_bytes(path, bytes);
  } catch (const Error& e) {
    throw e.with_context({path, "", "", ""});
  }
}

}  // namespace tandem
