#include "pipeline/face_detector.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "formats/load_model.h"
#include "pipeline/model_store.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

constexpr int kRegressors = 16;  // box centre and size, then 6 landmarks

// The converter fixed batch 1 into the heads' Reshape targets ([1, 512,
// 1]); a leading 0 copies the input's batch extent instead (ONNX Reshape),
// so one session runs any batch. Only targets that start with 1 and whose
// input starts with the batch are touched: every Reshape in BlazeFace.
void free_reshape_batch(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.dead || n.op_type != "Reshape" || n.inputs.size() < 2) continue;
    Value& target = g.values[size_t(n.inputs[1])];
    if (!target.is_constant() || target.constant->dtype() != DType::i64 || target.constant->numel() < 2) continue;
    Tensor t = target.constant->clone();
    if (t.data<int64_t>()[0] != 1) continue;
    t.data<int64_t>()[0] = 0;
    n.inputs[1] = g.add_constant(n.name + "/tandem_batch_free_shape", std::move(t));
  }
}

Graph load_blazeface(const FaceDetectorOptions& o) {
  ModelLoadOptions lo;
  lo.tfjs.dynamic_batch = true;
  Graph g = load_model(resolve_model(o.model), lo);
  free_reshape_batch(g);
  return g;
}

// BlazeFace's four heads, told apart by shape: scores [N, 512, 1] and
// [N, 384, 1], regressors [N, 512, 16] and [N, 384, 16].
struct Heads {
  const Tensor *score_fine = nullptr, *score_coarse = nullptr, *reg_fine = nullptr, *reg_coarse = nullptr;
};

Heads find_heads(const std::vector<Tensor>& out, int64_t n, int64_t fine, int64_t coarse, const ErrorContext& ctx) {
  Heads h;
  for (const Tensor& t : out) {
    if (t.rank() != 3 || t.dim(0) != n || t.dtype() != DType::f32) continue;
    const int64_t rows = t.dim(1), cols = t.dim(2);
    const Tensor** slot = cols == 1            ? (rows == fine ? &h.score_fine : rows == coarse ? &h.score_coarse : nullptr)
                          : cols == kRegressors ? (rows == fine ? &h.reg_fine : rows == coarse ? &h.reg_coarse : nullptr)
                                                : nullptr;
    if (slot) *slot = &t;
  }
  check(h.score_fine && h.score_coarse && h.reg_fine && h.reg_coarse,
        "BlazeFace outputs are not scores [N,512,1], [N,384,1] and regressors [N,512,16], [N,384,16]", ctx);
  return h;
}

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// One anchor's candidate in input pixels (human's decodeBoxes).
struct Candidate {
  float score;
  Box box;
  std::array<Point2, kFaceLandmarks> landmarks;
};

Candidate decode_row(float logit, const float* reg, Point2 anchor) {
  Candidate c;
  c.score = sigmoid(logit);
  const float cx = reg[0] + anchor.x, cy = reg[1] + anchor.y, w = reg[2], h = reg[3];
  c.box = {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
  for (int k = 0; k < kFaceLandmarks; ++k)
    c.landmarks[size_t(k)] = {reg[4 + 2 * k] + anchor.x, reg[5 + 2 * k] + anchor.y};
  return c;
}

// Greedy NMS as tf.image.nonMaxSuppression: best first, a box is dropped
// when it overlaps a kept one by more than `iou`.
std::vector<Candidate> suppress(std::vector<Candidate> c, float iou_threshold, size_t max_keep) {
  std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  std::vector<Candidate> kept;
  for (const Candidate& x : c) {
    if (kept.size() >= max_keep) break;
    bool overlaps = false;
    for (const Candidate& k : kept) overlaps = overlaps || iou(x.box, k.box) > iou_threshold;
    if (!overlaps) kept.push_back(x);
  }
  return kept;
}

// Input pixels -> photo pixels, and the recognition crop (human's
// scaleBoxCoordinates, enlargeBox, squarifyBox).
Face to_photo(const Candidate& c, float sx, float sy, float crop_scale, int width, int height) {
  Face f;
  f.score = c.score;
  const Box b{c.box.x1 * sx, c.box.y1 * sy, c.box.x2 * sx, c.box.y2 * sy};
  f.box = {std::clamp(b.x1, 0.f, float(width)), std::clamp(b.y1, 0.f, float(height)),
           std::clamp(b.x2, 0.f, float(width)), std::clamp(b.y2, 0.f, float(height))};
  const float cx = (b.x1 + b.x2) / 2, cy = (b.y1 + b.y2) / 2;
  const float half = crop_scale * std::max(b.x2 - b.x1, b.y2 - b.y1) / 2;
  f.crop = {std::round(cx - half), std::round(cy - half), std::round(cx + half), std::round(cy + half)};
  for (int k = 0; k < kFaceLandmarks; ++k)
    f.landmarks[size_t(k)] = {c.landmarks[size_t(k)].x * sx, c.landmarks[size_t(k)].y * sy};
  return f;
}

}  // namespace

namespace {

// The two anchor grids: strides size/16 (2 anchors a cell) and size/8 (6).
constexpr int kPerCell[2] = {2, 6};
int grid_stride(int size, int grid) { return grid == 0 ? size / 16 : size / 8; }
int grid_cells(int size, int grid) {
  const int stride = grid_stride(size, grid);
  return stride > 0 ? (size + stride - 1) / stride : 0;
}

}  // namespace

std::vector<Point2> blazeface_anchors(int size) {
  std::vector<Point2> anchors;
  for (int g = 0; g < 2; ++g) {
    const int stride = grid_stride(size, g), cells = grid_cells(size, g);
    for (int y = 0; y < cells; ++y)
      for (int x = 0; x < cells; ++x)
        for (int n = 0; n < kPerCell[g]; ++n) anchors.push_back({stride * (x + 0.5f), stride * (y + 0.5f)});
  }
  return anchors;
}

FaceDetector::FaceDetector(const FaceDetectorOptions& options)
    : options_(options),
      session_(load_blazeface(options),
               SessionOptions::on(options.device, options.precision, options.threads, options.strict_device)) {
  std::vector<TensorDesc> in = session_.input_descs();
  ErrorContext ctx{options.model, "", "", ""};
  check(in.size() == 1 && in[0].shape.size() == 4 && in[0].shape[3] == 3 && in[0].shape[1] == in[0].shape[2] &&
            in[0].shape[1] > 0,
        "a face detector needs one square [N, S, S, 3] image input", ctx);
  size_ = int(in[0].shape[1]);
  anchors_ = blazeface_anchors(size_);
}

image::PreprocessConfig FaceDetector::input_config() const {
  image::PreprocessConfig c = image::stretch_config(size_, size_);
  c.normalize = true;  // (x / 255 - 0.5) / 0.5 = x / 127.5 - 1
  c.mean = {0.5f, 0.5f, 0.5f};
  c.std = {0.5f, 0.5f, 0.5f};
  return c;
}

std::vector<std::vector<Face>> FaceDetector::detect(const Tensor& batch,
                                                    const std::vector<std::pair<int, int>>& sizes) {
  std::vector<Tensor> out;
  {
    TANDEM_ZONE_CAT("face detector network", "faces");
    out = session_.run({batch});
  }
  TANDEM_ZONE_CAT("face detector decode", "faces");
  const int64_t n = int64_t(sizes.size());
  const int64_t fine = int64_t(grid_cells(size_, 0)) * grid_cells(size_, 0) * kPerCell[0];
  const int64_t coarse = int64_t(anchors_.size()) - fine;
  const Heads h = find_heads(out, n, fine, coarse, ErrorContext{options_.model, "", "", ""});
  std::vector<std::vector<Face>> result;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Candidate> candidates;
    auto scan = [&](const Tensor& score, const Tensor& reg, int64_t rows, int64_t first_anchor) {
      const float* s = score.data<float>() + i * rows;
      const float* r = reg.data<float>() + i * rows * kRegressors;
      for (int64_t row = 0; row < rows; ++row) {
        if (sigmoid(s[row]) <= options_.min_score) continue;
        candidates.push_back(decode_row(s[row], r + row * kRegressors, anchors_[size_t(first_anchor + row)]));
      }
    };
    scan(*h.score_fine, *h.reg_fine, fine, 0);
    scan(*h.score_coarse, *h.reg_coarse, coarse, fine);
    const auto [width, height] = sizes[size_t(i)];
    const float sx = float(width) / float(size_), sy = float(height) / float(size_);
    std::vector<Face> faces;
    for (const Candidate& c : suppress(std::move(candidates), options_.iou, size_t(std::max(0, options_.max_faces))))
      faces.push_back(to_photo(c, sx, sy, options_.crop_scale, width, height));
    result.push_back(std::move(faces));
  }
  return result;
}

}  // namespace tandem::pipeline
