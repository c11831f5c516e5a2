// Weight shards -> tensors. A group's shards form one byte stream; its
// weights follow each other in manifest order, with no padding.
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "formats/file_bytes.h"
#include "formats/model_path.h"
#include "formats/tfjs/model_json.h"

namespace tandem::tfjs {

namespace {

std::string read_group(const TfjsModel& m, size_t group) {
  std::string bytes;
  for (const std::string& p : m.shard_groups[group]) {
    std::string full;
    try {
      full = resolve_model_relative(m.base_dir, p);
    } catch (const Error& e) {
      throw Error("weight shard " + e.message());
    }
    try {
      bytes += read_file_bytes(full, kMaxTensorFileBytes);
    } catch (const Error& e) {  // the shard is named in the message; the file is model.json
      throw Error("weight shard '" + full + "': " + e.message());
    }
  }
  return bytes;
}

template <typename Q>
void dequantize_affine(const char* src, const WeightSpec& w, Tensor& t) {
  int64_t n = t.numel();
  if (t.dtype() == DType::f32) {
    float* d = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      Q q;
      std::memcpy(&q, src + size_t(i) * sizeof(Q), sizeof(Q));
      d[i] = float(q) * w.scale + w.min;
    }
  } else {
    int32_t* d = t.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      Q q;
      std::memcpy(&q, src + size_t(i) * sizeof(Q), sizeof(Q));
      d[i] = int32_t(std::lround(float(q) * w.scale + w.min));
    }
  }
}

Tensor decode_weight(const char* src, const WeightSpec& w) {
  Tensor t = Tensor::empty(w.dtype, w.shape);
  int64_t n = t.numel();
  if (w.stored == "float16") {
    check_supported(w.dtype == DType::f32, "float16 quantization of a non-float weight");
    float* d = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + size_t(i) * 2, 2);
      d[i] = f16_to_float(h);
    }
  } else if (w.stored == "uint8") {
    dequantize_affine<uint8_t>(src, w, t);
  } else if (w.stored == "uint16") {
    dequantize_affine<uint16_t>(src, w, t);
  } else if (n > 0) {
    std::memcpy(t.raw(), src, stored_bytes(w));  // float32 / int32 / bool as stored
  }
  return t;
}

}  // namespace

std::vector<Tensor> load_weights(const TfjsModel& m) {
  std::vector<Tensor> out;
  out.reserve(m.weights.size());
  for (size_t g = 0; g < m.shard_groups.size(); ++g) {
    std::string bytes = read_group(m, g);
    uint64_t offset = 0;
    for (const WeightSpec& w : m.weights) {
      if (w.group != g) continue;
      uint64_t need = stored_bytes(w);
      check(offset + need <= bytes.size(),
            "weight '" + w.name + "' needs bytes " + std::to_string(offset) + ".." +
                std::to_string(offset + need) + " but the shards of its group hold " +
                std::to_string(bytes.size()));
      out.push_back(decode_weight(bytes.data() + offset, w));
      offset += need;
    }
    check(offset == bytes.size(), "weight shards hold " + std::to_string(bytes.size()) +
                                      " bytes but the manifest describes " + std::to_string(offset));
  }
  return out;
}

}  // namespace tandem::tfjs
