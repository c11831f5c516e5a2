#include "pipeline/tag_model.h"

#define XXH_INLINE_ALL  // header-only: no link dependency for users of the installed library
#include <xxhash.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/load_model.h"
#include "formats/tfjs/tfjs_importer.h"
#include "image/decode.h"
#include "image/labels.h"
#include "image/preprocess.h"
#include "pipeline/detector.h"
#include "pipeline/top_k.h"
#include "profile/zone.h"

namespace tandem::pipeline {

size_t TagModel::slot_floats() const { return size_t(shape_numel(batch_shape(1))); }

std::string model_id(const std::string& path) {
  const MappedFile file(path);
  const std::span<const uint8_t> bytes = file.bytes();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return std::filesystem::path(path).filename().string() + "@" + hex;
}

namespace {

Graph parse_model_file(const std::string& path) {
  TANDEM_ZONE_CAT("parse model file", "tag");
  return load_model(path);
}

// Either model's writer: its preprocessing into the batch slot.
class PreprocessWriter final : public SlotWriter {
 public:
  explicit PreprocessWriter(const image::PreprocessConfig& c) : pre_(c) {}
  void write(const image::Image& img, float* slot) override { pre_.run(img, {slot, pre_.output_size()}); }

 private:
  image::Preprocessor pre_;
};

// torchvision's ImageNet recipe; the network's own input size sets the crop.
class Classifier final : public TagModel {
 public:
  explicit Classifier(const TagModelOptions& o)
      : o_(o),
        session_(o.rewrite ? o.rewrite(parse_model_file(o.model)) : parse_model_file(o.model),
                 SessionOptions::on(o.device, o.precision, o.threads, o.strict_device)) {
    ErrorContext where{o.model, "", "", ""};
    std::vector<TensorDesc> in = session_.input_descs();
    check(in.size() == 1 && in[0].shape.size() == 4 && in[0].shape[1] == 3 && in[0].shape[2] > 0 &&
              in[0].shape[2] == in[0].shape[3],
          "a classifier for tag takes one [N, 3, S, S] input, this model takes " +
              (in.empty() ? std::string("none") : in[0].str()),
          where);
    config_.crop = int(in[0].shape[2]);
    config_.resize = config_.crop * 256 / 224;
    {
      TANDEM_ZONE_CAT("read class names", "tag");
      labels_ = image::imagenet_labels();
    }
    {
      TANDEM_ZONE_CAT("hash model file", "tag");
      id_ = model_id(o.model);
    }
    if (o_.min_score < 0) o_.min_score = 0.05f;
  }
  int decode_min_width() const override { return config_.resize; }
  int decode_min_height() const override { return config_.resize; }
  Shape batch_shape(int64_t n) const override { return {n, 3, config_.crop, config_.crop}; }
  std::unique_ptr<SlotWriter> make_writer() const override {
    return std::make_unique<PreprocessWriter>(config_);
  }
  const image::PreprocessConfig* preprocess_config() const override { return &config_; }
  Backend& backend() const override { return session_.backend(); }
  const Session* session() const override { return &session_; }
  void prepare(const Tensor& batch) override { session_.prepare({batch}); }

  std::vector<TagResult> tag(const Tensor& batch, int count,
                             const std::vector<std::pair<int, int>>&) override {
    std::vector<Tensor> out = session_.run({batch});
    const Tensor& logits = out.at(0);
    check(logits.shape().size() == 2 && logits.shape()[0] == batch.shape()[0],
          "classifier output " + logits.desc().str() + " is not [N, classes]", {o_.model, "", "", ""});
    int classes = int(logits.shape()[1]);
    std::vector<TagResult> r(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      for (auto [c, p] : softmax_top_k(logits.data<float>() + size_t(i) * size_t(classes), classes, o_.top))
        if (p >= o_.min_score)
          r[size_t(i)].tags.push_back({size_t(c) < labels_.size() && classes == int(labels_.size())
                                           ? labels_[size_t(c)]
                                           : "class " + std::to_string(c),
                                       p});
    return r;
  }

 private:
  TagModelOptions o_;
  mutable Session session_;
  image::PreprocessConfig config_;
  std::vector<std::string> labels_;
};

class DetectorModel final : public TagModel {
 public:
  explicit DetectorModel(const TagModelOptions& o)
      : o_(o), det_(detector_options(o)), config_(det_.input_config()) {
    id_ = model_id(o.model);
  }
  // A decode covering the input: a 12-MP photo at 1/4. At 1/8 (504x378,
  // stretched up to 512x512) 54 of 300 camera-like photos lost or changed a
  // detection (bench/detector_dct_scale.cpp, docs/BENCHMARKS.md).
  int decode_min_width() const override { return det_.input_width(); }
  int decode_min_height() const override { return det_.input_height(); }
  // On the 3,500-photo corpus (H200, fp32) skipping the refinement scans
  // changed a detection in 38 photos, decoding on the GPU's JPEG engines
  // instead of the CPU in 68 (docs/BENCHMARKS.md), for 2-3x faster
  // progressive decodes.
  bool coarse_progressive_ok() const override { return true; }
  Shape batch_shape(int64_t n) const override { return {n, det_.input_height(), det_.input_width(), 3}; }
  std::unique_ptr<SlotWriter> make_writer() const override {
    return std::make_unique<PreprocessWriter>(config_);
  }
  const image::PreprocessConfig* preprocess_config() const override { return &config_; }
  Backend& backend() const override { return det_.backend(); }
  const Session* session() const override { return &det_.session(); }
  void prepare(const Tensor& batch) override { det_.prepare(batch); }

  std::vector<TagResult> tag(const Tensor& batch, int count,
                             const std::vector<std::pair<int, int>>& sizes) override {
    std::vector<std::pair<int, int>> all = sizes;
    all.resize(size_t(batch.shape()[0]), {1, 1});
    std::vector<std::vector<Detection>> dets = det_.detect(batch, all);
    std::vector<TagResult> r(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      for (const Tag& t : tags_of(dets[size_t(i)], det_.labels())) {
        if (int(r[size_t(i)].tags.size()) >= o_.top) break;
        r[size_t(i)].tags.push_back({t.label, t.best_score});
      }
      for (const Detection& d : dets[size_t(i)])  // --top limits tags, not objects
        r[size_t(i)].objects.push_back({label_of(d.class_id, det_.labels()), d.score, d.box});
    }
    return r;
  }

 private:
  static DetectorOptions detector_options(const TagModelOptions& o) {
    DetectorOptions d;
    d.model = o.model;
    d.device = o.device;
    d.precision = o.precision;
    d.threads = o.threads;
    if (o.min_score >= 0) d.min_score = o.min_score;
    d.strict_device = o.strict_device;
    d.rewrite = o.rewrite;
    return d;
  }
  TagModelOptions o_;
  Detector det_;
  image::PreprocessConfig config_;
};

}  // namespace

std::unique_ptr<TagModel> load_tag_model(const TagModelOptions& o) {
  if (is_tfjs_model_path(o.model)) return std::make_unique<DetectorModel>(o);
  return std::make_unique<Classifier>(o);
}

}  // namespace tandem::pipeline
