#pragma once
// The face pipeline's photos as the CLI reads them, and --precision int8
// for FaceRes: the recognition model is calibrated on face crops, so its
// calibration photos go through the face detector and the cropper first,
// as the faces it will describe do.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common.h"
#include "graph/graph.h"
#include "pipeline/face_detector.h"

namespace tandem::cli {

// One photo of a batch: its bytes (kept for the face crops) and size, or
// why it could not be read.
struct FacePhoto {
  std::vector<uint8_t> bytes;
  std::pair<int, int> size;
  std::string error;
};

// Reads and decodes photos [first, first + n) of `paths` into the
// detector's batch (n slots of its input); a photo that cannot be read
// gets zeros and its error.
std::vector<FacePhoto> read_face_batch(const std::vector<std::string>& paths,
                                       const pipeline::FaceDetector& det, size_t first, size_t n,
                                       float* batch);

// FaceRes `g` quantized (quantize_for_device) on the faces `det` finds in
// --calibrate's photos (at most 64, `batch` photos per detector run),
// cropped as the face stage crops them. Error without --calibrate or
// without a face in it.
Graph quantized_faceres(Graph g, const CommonOptions& opts, pipeline::FaceDetector& det, int batch);

// The same as a rewrite for FaceEmbedderOptions, with a face detector of
// its own made from `detector` (tag's face stage makes its detector later).
std::function<Graph(Graph)> faceres_int8_rewrite(const CommonOptions& opts,
                                                 const pipeline::FaceDetectorOptions& detector);

}  // namespace tandem::cli
