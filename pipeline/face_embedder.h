#pragma once
// Who a face is: FaceRes (the model @vladmandic/human ships) turns a
// 224x224 face crop into a 1024-value descriptor, an age and a gender
// estimate, read out as human reads them.
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "graph/session.h"
#include "pipeline/host_tensor_pool.h"

namespace tandem::pipeline {

struct FaceTraits {
  std::vector<float> descriptor;  // 1024 values, not normalised (as human keeps it)
  float age = 0;                  // years
  float gender_score = 0;         // the model's P(male), 0..1
};

// Human's reading of the age head: the best decade bin, moved toward the
// likelier neighbour by that neighbour's probability.
float age_of(const float* bins, int count);

// Human's descriptor similarity, 0..1: (0.8 - 0.05 * sqrt(sum (a - b)^2)) /
// 0.6 clamped; human calls two faces one person above 0.5.
float descriptor_similarity(const std::vector<float>& a, const std::vector<float>& b);

struct FaceEmbedderOptions {
  std::string model = "faceres";  // installed name or model.json path
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  int threads = 0;
  bool strict_device = false;
  // Applied to the loaded graph before its session compiles (the CLI's
  // --precision int8 quantizes it here).
  std::function<Graph(Graph)> rewrite;
};

class FaceEmbedder {
 public:
  explicit FaceEmbedder(const FaceEmbedderOptions& options);

  int input_size() const { return size_; }
  const Session& session() const { return session_; }

  // An [n, size, size, 3] crops buffer in the memory the network's device
  // copies from fastest, its contents left from an earlier batch; back
  // with recycle() once describe() has returned.
  Tensor input_buffer(int64_t n) { return inputs_.take(DType::f32, {n, size_, size_, 3}); }
  void recycle(Tensor t) { inputs_.give(std::move(t)); }

  // `crops`: [N, size, size, 3] RGB, 0..255 (face_crop.h). One per crop.
  std::vector<FaceTraits> describe(const Tensor& crops);

 private:
  FaceEmbedderOptions options_;
  Session session_;
  HostTensorPool inputs_{session_.backend()};
  int size_ = 0;
};

}  // namespace tandem::pipeline
