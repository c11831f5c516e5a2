#pragma once
// Faces as a stage of `tandem tag`: after the detector's batch has run, the
// same batch (the photos stretched to the detector's input) is scaled down
// to BlazeFace's input, the faces found are cut from a fresh, sharper decode
// of just their region (pipeline/face_crop.h), and their crops run through
// FaceRes in one batch. No photo is decoded twice whole: the detector's
// input serves the face detector, and only face regions are decoded again.
//
// The stage is split in two so that it can run beside the detector: input()
// copies what it needs out of the batch (the batch buffer can then take the
// next photos), and run() does the rest on a thread of its own, taking the
// device lock only while a network runs on it.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "image/image.h"
#include "image/preprocess.h"
#include "pipeline/face_crop.h"
#include "pipeline/face_detector.h"
#include "pipeline/face_embedder.h"
#include "pipeline/tag_score.h"

namespace tandem::pipeline {

struct FaceStageOptions {
  FaceDetectorOptions detector;
  FaceEmbedderOptions embedder;
  image::DecodeOptions decode;  // limits for the region decodes
  int crop_threads = 0;         // 0: half the cores
};

// Runs body(k) for every k in [0, n) and returns when all have run; on
// which threads is the caller's choice (tag lends its decoder threads).
using ParallelFor = std::function<void(size_t n, const std::function<void(size_t)>& body)>;

// A ParallelFor that starts up to `threads` threads of its own per call.
ParallelFor own_threads(int threads);

// The faces that are not an animal's: BlazeFace also finds the faces of
// dogs, horses and birds (darknet's dog, eagle and horses photos, each at
// >= 0.5), which must not become people. A face whose centre lies in a
// detected animal (COCO's bird to giraffe) and in no detected person is
// dropped; requiring a person around every face instead lost 2 of the 22
// faces of face-api's demo group photos, where the detector missed people
// that overlap. Applied before the faces are cut, so no region is decoded
// for a face that is dropped.
std::vector<Face> faces_on_people(std::vector<Face> faces,
                                  const std::vector<DetectedObject>& objects);

// Where describe_faces finds photo i's bytes: filled into `scratch` (or any
// buffer that outlives the call); may throw, failing that photo's faces.
using PhotoBytes = std::function<std::span<const uint8_t>(size_t photo, std::vector<uint8_t>& scratch)>;

// One face's recognition: its traits, or why its crop failed.
struct DescribedFace {
  std::optional<FaceTraits> traits;
  std::string error;
  bool from_kept = false;  // cut from the photo's kept pixels, not from a region decode
};

// Where the face stage's time went, summed over its calls.
struct FaceStageStats {
  // Photos with faces: all cut from the GPU's kept decode, all from the
  // CPU's decode for the network; some region-decoded.
  int64_t from_kept = 0, from_decode = 0, decoded = 0;
  double device_wait_s = 0;  // waiting for the device lock (the tag model holds it meanwhile)
  double networks_s = 0;     // BlazeFace and FaceRes, holding it
  double crops_s = 0;        // cutting a batch's crops, until its slowest photo's are cut

  FaceStageStats& operator+=(const FaceStageStats& o) {
    from_kept += o.from_kept, from_decode += o.from_decode, decoded += o.decoded;
    device_wait_s += o.device_wait_s, networks_s += o.networks_s, crops_s += o.crops_s;
    return *this;
  }
};

// Cuts every face from a fresh region decode of its photo (one task per
// photo, run through `parallel`, reading the photo once), or from its kept
// pixels where `kept` has a reader for it and they are still there, and runs
// FaceRes on the crops in one batch padded to a power of two, at least 8,
// so the network compiles once per size (a batch of every new size cost
// 2.85 s of a 9.6 s tag of 6 photos on the 2-core machine). The result is
// parallel to `faces`; `names[i]` names photo i in errors. `device`, when
// given, is held while FaceRes runs (and not while the crops decode).
// `stats`, when given, adds the times of the crops and of FaceRes (its wait
// for the device apart).
std::vector<std::vector<DescribedFace>> describe_faces(
    FaceEmbedder& embedder, const std::vector<std::vector<Face>>& faces, const PhotoBytes& bytes,
    const std::vector<std::string>& names, const image::DecodeOptions& opt,
    const ParallelFor& parallel, std::mutex* device = nullptr,
    const std::vector<HeldPixels>* kept = nullptr, FaceStageStats* stats = nullptr);

class FaceStage {
 public:
  // `input`: what the tag model's batches hold; it must be the whole photo
  // stretched, raw 0..255 (the detector's), else an Error saying so.
  FaceStage(const FaceStageOptions& options, const image::PreprocessConfig& input);

  // Whether batches of `input` hold whole photos the stage can use.
  static bool serves(const image::PreprocessConfig& input);

  // Whether the region decodes run on crop_threads threads of the stage's
  // own (FaceStageOptions::crop_threads set), not on the caller's.
  bool has_own_crop_threads() const { return options_.crop_threads > 0; }

  // Compiles both networks for batches of `n` photos.
  void prepare(int n);

  // BlazeFace's input for photos [0, count) of `batch` ([N, h, w, 3] floats
  // of the tag model's input), in a buffer of its own: after this the batch
  // may be overwritten. Thread-safe.
  Tensor input(const Tensor& batch, int count);

  // The faces of photos [0, count) of `input` (from input()); `photos[i]` is
  // photo i's path, empty for a slot that holds no photo; sizes[i] its
  // upright size. `device` is held while a network runs: the tag model
  // shares the device (its handles serve one thread at a time). A face
  // whose region cannot be decoded again (the file changed meanwhile) is
  // left out. `input`'s buffer is kept for a later input(). The region
  // decodes run through `crops`, or on crop_threads threads of the stage's
  // own when it is null. `kept[i]`, when given and set, reads photo i's
  // pixels decoded earlier: its faces are cut from them while they last.
  // `objects[i]`, when given, are photo i's detections: its faces on
  // animals are dropped before any is cut (faces_on_people). `stats`, when
  // given, adds the photos whose faces were cut each way and where the
  // call's time went.
  std::vector<std::vector<FaceRecord>> run(
      Tensor input, int count, const std::vector<std::pair<int, int>>& sizes,
      const std::vector<std::string>& photos, std::mutex& device,
      const ParallelFor* crops = nullptr, const std::vector<HeldPixels>* kept = nullptr,
      FaceStageStats* stats = nullptr,
      const std::vector<std::vector<DetectedObject>>* objects = nullptr);

 private:
  Tensor take_buffer(int count);

  FaceStageOptions options_;
  image::PreprocessConfig input_;
  FaceDetector detector_;
  FaceEmbedder embedder_;
  int crop_threads_ = 1;
  int batch_ = 0;  // the batch size prepare() compiled for
};

}  // namespace tandem::pipeline
