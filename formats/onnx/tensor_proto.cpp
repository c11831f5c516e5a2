#include "formats/onnx/tensor_proto.h"

#include <bit>
#include <charconv>
#include <filesystem>
#include <limits>

#include "formats/file_bytes.h"
#include "formats/model_path.h"

namespace tandem {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host needs byte swaps here");

namespace {

using onnx::TensorProto;

// How one ONNX element type is laid out in raw_data and held by tandem.
struct ElemInfo {
  DType dtype;       // what tandem stores
  size_t onnx_size;  // bytes per element in raw_data / external data
};

std::optional<ElemInfo> elem_info(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT: return ElemInfo{DType::f32, 4};
    case TensorProto::FLOAT16: return ElemInfo{DType::f16, 2};
    case TensorProto::BFLOAT16: return ElemInfo{DType::bf16, 2};
    case TensorProto::DOUBLE: return ElemInfo{DType::f64, 8};
    case TensorProto::INT8: return ElemInfo{DType::i8, 1};
    case TensorProto::UINT8: return ElemInfo{DType::u8, 1};
    case TensorProto::INT16: return ElemInfo{DType::i32, 2};
    case TensorProto::UINT16: return ElemInfo{DType::i32, 2};
    case TensorProto::INT32: return ElemInfo{DType::i32, 4};
    case TensorProto::UINT32: return ElemInfo{DType::i64, 4};
    case TensorProto::INT64: return ElemInfo{DType::i64, 8};
    case TensorProto::UINT64: return ElemInfo{DType::i64, 8};
    case TensorProto::BOOL: return ElemInfo{DType::boolean, 1};
    default: return std::nullopt;
  }
}

}  // namespace

std::string onnx_type_name(int32_t t) {
  return TensorProto::DataType_IsValid(t)
             ? TensorProto::DataType_Name(TensorProto::DataType(t))
             : "code " + std::to_string(t);
}

namespace {

[[noreturn]] void fail(const std::string& tensor, const std::string& msg) {
  throw Error("tensor '" + tensor + "': " + msg);
}

// Element count from untrusted dims: no negatives, no overflow, at most
// kMaxTensorFileBytes once stored as `info`.
int64_t checked_numel(const TensorProto& p, const ElemInfo& info, Shape& shape) {
  int64_t n = 1;
  size_t widest = std::max(info.onnx_size, dtype_size(info.dtype));
  const int64_t limit = int64_t(kMaxTensorFileBytes / widest);
  for (int64_t d : p.dims()) {
    if (d < 0) fail(p.name(), "negative dimension " + std::to_string(d));
    if (d != 0 && n > limit / d)
      fail(p.name(), "declared size exceeds the 16 GiB limit for one tensor");
    n *= d;
    shape.push_back(d);
  }
  return n;
}

uint64_t parse_u64(const std::string& tensor, const std::string& key, const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    fail(tensor, "external data " + key + " '" + s + "' is not a non-negative integer");
  return v;
}

// Bytes of a tensor stored outside the model (data_location == EXTERNAL).
// The location must be relative and must not climb out of `base_dir`.
std::string read_external(const TensorProto& p, const std::string& base_dir,
                          uint64_t expected) {
  std::string location;
  uint64_t offset = 0, length = expected;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_u64(p.name(), "offset", kv.value());
    else if (kv.key() == "length") length = parse_u64(p.name(), "length", kv.value());
  }
  if (length != expected)
    fail(p.name(), "external data length " + std::to_string(length) + " but dims need " +
                       std::to_string(expected) + " bytes");
  std::string full;
  try {
    full = resolve_model_relative(base_dir, location);
  } catch (const Error& e) {
    fail(p.name(), "external data " + e.message());
  }
  try {
    return read_file_range(full, offset, length);
  } catch (const Error& e) {
    fail(p.name(), "external data '" + full + "': " + e.message());
  }
}


// raw bytes (raw_data or external) -> tensor storage, widening where needed.
void copy_raw(const TensorProto& p, const std::string& raw, Tensor& t) {
  const char* s = raw.data();
  int64_t n = t.numel();
  switch (p.data_type()) {
    case TensorProto::INT16: return widen<int16_t>(s, t.data<int32_t>(), n);
    case TensorProto::UINT16: return widen<uint16_t>(s, t.data<int32_t>(), n);
    case TensorProto::UINT32: return widen<uint32_t>(s, t.data<int64_t>(), n);
    case TensorProto::UINT64: {
      uint64_t v;
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&v, s + size_t(i) * 8, 8);
        if (v > uint64_t(std::numeric_limits<int64_t>::max()))
          fail(p.name(), "UINT64 value " + std::to_string(v) + " does not fit int64");
        t.data<int64_t>()[i] = int64_t(v);
      }
      return;
    }
    case TensorProto::BOOL: {
      auto* d = static_cast<uint8_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] != 0;  // canonical 0/1
      return;
    }
    default:
      if (!raw.empty()) std::memcpy(t.raw(), s, raw.size());
  }
}

// int32_data holds INT32 and every narrower type (fp16/bf16 as bit patterns).
void copy_int32_data(const TensorProto& p, Tensor& t) {
  const auto& src = p.int32_data();
  auto in_range = [&](int64_t lo, int64_t hi) {
    for (int32_t v : src)
      if (v < lo || v > hi)
        fail(p.name(), "int32_data value " + std::to_string(v) + " out of range for " +
                           onnx_type_name(p.data_type()));
  };
  int n = src.size();
  switch (p.data_type()) {
    case TensorProto::INT8: in_range(-128, 127); for (int i = 0; i < n; ++i) t.data<int8_t>()[i] = int8_t(src[i]); return;
    case TensorProto::UINT8: in_range(0, 255); for (int i = 0; i < n; ++i) t.data<uint8_t>()[i] = uint8_t(src[i]); return;
    case TensorProto::BOOL: for (int i = 0; i < n; ++i) static_cast<uint8_t*>(t.raw())[i] = src[i] != 0; return;
    case TensorProto::INT16: in_range(-32768, 32767); break;
    case TensorProto::UINT16: in_range(0, 65535); break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: {
      in_range(0, 65535);
      auto* d = static_cast<uint16_t*>(t.raw());
      for (int i = 0; i < n; ++i) d[i] = uint16_t(src[i]);
      return;
    }
    case TensorProto::INT32: break;
    default: fail(p.name(), "int32_data used for " + onnx_type_name(p.data_type()));
  }
  for (int i = 0; i < n; ++i) t.data<int32_t>()[i] = src[i];
}

// Typed repeated fields: returns how many elements the proto holds there.
int64_t typed_count(const TensorProto& p) {
  switch (p.data_type()) {
    case TensorProto::FLOAT: return p.float_data_size();
    case TensorProto::DOUBLE: return p.double_data_size();
    case TensorProto::INT64: return p.int64_data_size();
    case TensorProto::UINT32:
    case TensorProto::UINT64: return p.uint64_data_size();
    default: return p.int32_data_size();
  }
}

void copy_typed(const TensorProto& p, Tensor& t) {
  switch (p.data_type()) {
    case TensorProto::FLOAT:
      if (p.float_data_size()) std::memcpy(t.raw(), p.float_data().data(), t.bytes());
      return;
    case TensorProto::DOUBLE:
      if (p.double_data_size()) std::memcpy(t.raw(), p.double_data().data(), t.bytes());
      return;
    case TensorProto::INT64:
      if (p.int64_data_size()) std::memcpy(t.raw(), p.int64_data().data(), t.bytes());
      return;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      for (int i = 0; i < p.uint64_data_size(); ++i) {
        uint64_t v = p.uint64_data(i);
        if (v > uint64_t(std::numeric_limits<int64_t>::max()) ||
            (p.data_type() == TensorProto::UINT32 && v > 0xffffffffu))
          fail(p.name(), "uint64_data value " + std::to_string(v) + " out of range");
        t.data<int64_t>()[i] = int64_t(v);
      }
      return;
    default: copy_int32_data(p, t);
  }
}

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t elem_type) {
  auto info = elem_info(elem_type);
  return info ? std::optional<DType>(info->dtype) : std::nullopt;
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32: return TensorProto::FLOAT;
    case DType::f16: return TensorProto::FLOAT16;
    case DType::bf16: return TensorProto::BFLOAT16;
    case DType::f64: return TensorProto::DOUBLE;
    case DType::i8: return TensorProto::INT8;
    case DType::u8: return TensorProto::UINT8;
    case DType::i32: return TensorProto::INT32;
    case DType::i64: return TensorProto::INT64;
    case DType::boolean: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

Tensor tensor_from_proto(const TensorProto& p, const std::string& base_dir) {
  auto info = elem_info(p.data_type());
  if (!info)
    throw Error::unsupported("tensor '" + p.name() + "': element type " + onnx_type_name(p.data_type()) + " is not supported");
  if (p.has_segment()) fail(p.name(), "segmented tensors are not supported");
  Shape shape;
  int64_t n = checked_numel(p, *info, shape);
  uint64_t raw_bytes = uint64_t(n) * info->onnx_size;
  // Check what the proto holds against the dims before allocating anything.
  std::string external;
  const std::string* raw = nullptr;
  if (p.data_location() == TensorProto::EXTERNAL) {
    external = read_external(p, base_dir, raw_bytes);
    raw = &external;
  } else if (p.has_raw_data()) {
    raw = &p.raw_data();
    if (raw->size() != raw_bytes)
      fail(p.name(), "raw_data has " + std::to_string(raw->size()) + " bytes but dims " +
                         shape_str(shape) + " need " + std::to_string(raw_bytes));
  } else if (typed_count(p) != n) {
    fail(p.name(), "holds " + std::to_string(typed_count(p)) + " elements but dims " +
                       shape_str(shape) + " need " + std::to_string(n));
  }
  Tensor t = Tensor::empty(info->dtype, shape);
  if (raw) copy_raw(p, *raw, t);
  else copy_typed(p, t);
  return t;
}

TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  check(t.defined(), "tensor '" + name + "' is empty");
  check(t.device().is_cpu() && t.layout() == Layout::plain,
        "tensor '" + name + "' must be a plain-layout host tensor to be written, not " +
            t.desc().str());
  TensorProto p;
  p.set_name(name);
  p.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(static_cast<const char*>(t.raw()), t.bytes());
  return p;
}

}  // namespace tandem
