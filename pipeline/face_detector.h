#pragma once
// Faces in photos: BlazeFace (the model @vladmandic/human ships, 256x256
// input, 896 anchors) run on a batch, decoded on the host as human decodes
// it (anchor offsets, sigmoid scores, greedy NMS), boxes and six landmarks
// in the pixels of the upright photo.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "graph/session.h"
#include "image/preprocess.h"
#include "pipeline/detection.h"
#include "pipeline/host_tensor_pool.h"

namespace tandem::pipeline {

struct Point2 {
  float x = 0, y = 0;
};

// The order of BlazeFace's landmarks (the person's own left and right).
enum FaceLandmark { kLeftEye = 0, kRightEye, kNose, kMouth, kLeftEar, kRightEar, kFaceLandmarks };

struct Face {
  Box box;    // the detector's box, clamped to the photo
  // The square the recognition model sees: the box enlarged 1.4x about its
  // centre and squared (human's enlargeBox + squarifyBox); may reach past
  // the photo's edges, where the crop is black, as in TF.js's cropAndResize.
  Box crop;
  std::array<Point2, kFaceLandmarks> landmarks{};
  float score = 0;
};

struct FaceDetectorOptions {
  std::string model = "blazeface";  // installed name or model.json path
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  int threads = 0;
  // Human's default is 0.2; on face-api's demo photos that adds a hand at
  // 0.22 to 22 real faces, and in a photo library a false face becomes a
  // false person.
  float min_score = 0.5f;
  float iou = 0.1f;        // human's iouThreshold: faces barely overlap
  int max_faces = 200;
  float crop_scale = 1.4f;  // human's detector.scale
  bool strict_device = false;
};

// The anchor centres of BlazeFace's 896 outputs for an input of `size`
// pixels: strides size/16 (2 anchors a cell) then size/8 (6 a cell), rows
// then columns, as human's generateAnchors makes them.
std::vector<Point2> blazeface_anchors(int size);

class FaceDetector {
 public:
  explicit FaceDetector(const FaceDetectorOptions& options);

  int input_size() const { return size_; }
  // The input one photo becomes: stretched to size x size, x / 127.5 - 1.
  image::PreprocessConfig input_config() const;
  const Session& session() const { return session_; }
  void prepare(const Tensor& batch) { session_.prepare({batch}); }
  // An [n, size, size, 3] input buffer in the memory the network's device
  // copies from fastest, its contents left from an earlier batch; back
  // with recycle() once detect() has returned.
  Tensor input_buffer(int64_t n) { return inputs_.take(DType::f32, {n, size_, size_, 3}); }
  void recycle(Tensor t) { inputs_.give(std::move(t)); }

  // `batch`: [N, size, size, 3] as input_config() makes it; sizes[i] is
  // photo i's upright (width, height). Faces per photo, best first.
  std::vector<std::vector<Face>> detect(const Tensor& batch, const std::vector<std::pair<int, int>>& sizes);

 private:
  FaceDetectorOptions options_;
  Session session_;
  HostTensorPool inputs_{session_.backend()};
  int size_ = 0;
  std::vector<Point2> anchors_;
};

}  // namespace tandem::pipeline
