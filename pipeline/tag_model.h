#pragma once
// What `tandem tag` runs: a loaded model seen as "a batch of images in, tags
// per image out", whatever the network is. Two kinds:
//   classifier: an ImageNet ONNX classifier (torchvision preprocessing:
//               Resize(256), CenterCrop(224), Normalize), softmax top-K;
//   detector:   the CenterNet COCO detector (pipeline/detector.h), one tag
//               per detected class with its best score, and every object
//               with its box.
// Decoder threads fill batch slots through a SlotWriter (one per thread, it
// keeps scratch); the inference thread calls tag().
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/device.h"
#include "graph/session.h"
#include "image/image.h"
#include "image/preprocess.h"
#include "pipeline/tag_score.h"

namespace tandem::pipeline {

struct TagModelOptions {
  std::string model;  // path or installed name (resolved by the caller)
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  int threads = 0;         // CPU inference threads (0 = all)
  int top = 5;             // at most this many tags per image
  float min_score = -1.f;  // below: dropped (default per kind: 0.05 classifier, 0.25 detector)
  bool strict_device = false;  // SessionOptions::strict_device
  // Applied to the network's graph before its session compiles it (tag's
  // --precision int8 quantizes it there); none leaves it as loaded.
  std::function<Graph(Graph)> rewrite;
};

class SlotWriter {
 public:
  virtual ~SlotWriter() = default;
  // Writes one image's network input at `slot` (slot_floats() floats).
  virtual void write(const image::Image& img, float* slot) = 0;
};

class TagModel {
 public:
  virtual ~TagModel() = default;
  // Names the model and its weights: file name + content hash, so a catalog
  // keeps results of different models (or retrained weights) apart.
  const std::string& id() const { return id_; }
  // The smallest decode that still covers the input (JPEG DCT scaling).
  virtual int decode_min_width() const = 0;
  virtual int decode_min_height() const = 0;
  // Whether progressive JPEGs may skip luma's refinement scans
  // (image::DecodeOptions::coarse_progressive) for this model's input: true
  // only where measured to change its results no more than tandem's own
  // two decoders (CPU and GPU) differ from each other.
  virtual bool coarse_progressive_ok() const { return false; }
  // The network's input for n images.
  virtual Shape batch_shape(int64_t n) const = 0;
  size_t slot_floats() const;
  virtual std::unique_ptr<SlotWriter> make_writer() const = 0;
  // The preprocessing the writers apply (a classifier's resize, center crop
  // and normalization; the detector's stretch to its input, raw values), so
  // that the GPU JPEG decoders produce the same input; null when the
  // writers do something no PreprocessConfig describes.
  virtual const image::PreprocessConfig* preprocess_config() const { return nullptr; }
  // Tags (and a detector's objects) of images 0..count-1 of `batch` (its
  // shape is batch_shape(N), N >= count; slots past count are padding).
  // sizes[i]: image i's upright full-size (width, height), the pixels the
  // objects' boxes are in.
  virtual std::vector<TagResult> tag(const Tensor& batch, int count,
                                     const std::vector<std::pair<int, int>>& sizes) = 0;
  // Compiles what tag() will run on batches like `batch` (its contents are
  // not read), so that the first batch does not wait for it: the caller
  // does this while the decoders fill the first buffers.
  virtual void prepare(const Tensor& batch) {}
  // Where the batch buffers should live (pinned host memory on a GPU).
  virtual Backend& backend() const = 0;
  // The network's session (what fell back to the CPU, and its cost), or
  // null for a model that runs no network.
  virtual const Session* session() const { return nullptr; }

 protected:
  std::string id_;
};

// Loads `o.model`: a TF.js model.json is the detector, an .onnx file with one
// [N, 3, H, W] input and [N, 1000] output the classifier. Throws Error naming
// the file otherwise.
std::unique_ptr<TagModel> load_tag_model(const TagModelOptions& o);

// "resnet50.onnx@3f2a9c01d4e5b6a7": the file name and 64 bits of the XXH3
// hash of its bytes.
std::string model_id(const std::string& path);

}  // namespace tandem::pipeline
