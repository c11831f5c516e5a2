#pragma once
// An object detector: one loaded model, images in, boxes in image pixels out.
// The network runs a whole batch at once and ranks each image's peaks
// itself (TopK appended to the graph), so only the best k of a heat map's
// 1.3 M scores leave the device; boxes (pipeline/centernet.h) and NMS are
// made per image on the host.
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "formats/load_model.h"
#include "graph/session.h"
#include "image/image.h"
#include "image/preprocess.h"
#include "pipeline/detection.h"

namespace tandem::pipeline {

struct DetectorOptions {
  std::string model;                      // model.json path (CenterNet heads)
  // [N, h, w, classes]: the sigmoid heat map with every value that is not
  // the maximum of its 3x3 neighbourhood set to 0 (the graph's own peak test).
  std::string peaks_output = "tower_0/mul_1";
  std::string size_output = "tower_0/wh";  // [N, h, w, 4]
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  int threads = 0;
  float min_score = 0.25f;       // detections below are dropped
  float iou = 0.5f;              // NMS threshold within a class
  float cross_class_iou = 0.7f;  // and across classes (one label per object)
  int max_detections = 100;
  bool strict_device = false;  // SessionOptions::strict_device
  // Applied to the network's graph before its session compiles it (tag's
  // --precision int8 quantizes it there); none leaves it as loaded.
  std::function<Graph(Graph)> rewrite;
};

// Fills one batch slot: the whole upright image stretched to the network
// input (PIL-exact antialiased bilinear), RGB, NHWC float 0..255, as
// image::stretch_config describes it (the GPU JPEG decoders make the same
// input from that description). One per thread.
class DetectorInput {
 public:
  DetectorInput(int width, int height) : pre_(image::stretch_config(width, height)) {}
  const image::PreprocessConfig& config() const { return pre_.config(); }
  size_t floats() const { return pre_.output_size(); }
  void run(const image::Image& img, float* out) { pre_.run(img, {out, floats()}); }

 private:
  image::Preprocessor pre_;
};

// How the detector's model loads: up to its peak map and size head, the
// batch left free (what tandem quantize quantizes of it, too).
ModelLoadOptions heads_load_options(const DetectorOptions& o);

// The network Detector runs: the model up to its peak map and size head,
// then each image's peaks ranked (scores, flat indices), `rewrite` applied,
// as benchmarks time it.
Graph detector_graph(const DetectorOptions& options);

class Detector {
 public:
  explicit Detector(const DetectorOptions& options);

  int input_width() const { return width_; }
  int input_height() const { return height_; }
  const std::vector<std::string>& labels() const { return labels_; }
  DetectorInput make_input() const { return DetectorInput(width_, height_); }
  // What make_input()'s writers do, for the GPU JPEG decoders to do the same.
  image::PreprocessConfig input_config() const { return image::stretch_config(width_, height_); }
  Backend& backend() const { return session_.backend(); }
  const Session& session() const { return session_; }
  // Compiles the network for batches like `batch` (contents not read).
  void prepare(const Tensor& batch) { session_.prepare({batch}); }

  // `batch`: [N, height, width, 3] filled by DetectorInput; sizes[i] is
  // image i's (width, height) for scaling boxes back. Result per image,
  // best first.
  std::vector<std::vector<Detection>> detect(const Tensor& batch,
                                             const std::vector<std::pair<int, int>>& sizes);

 private:
  DetectorOptions options_;
  // The peaks are ranked in the map's [classes, h, w] order; set while
  // session_'s graph is loaded, so declared (initialised) first.
  bool class_major_ = false;
  Session session_;
  int width_ = 0, height_ = 0;
  std::vector<std::string> labels_;
};

}  // namespace tandem::pipeline
