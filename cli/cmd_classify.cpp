// `tandem classify IMAGE... --model M.onnx`: ImageNet-style classification.
// The model is loaded once; images are decoded (libjpeg-turbo with DCT
// scaling, PNG) and preprocessed on all cores, straight into the batch
// tensor, then run batch by batch. A bad image is reported and skipped; the
// others are still classified.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detect.h"
#include "cli/parallel.h"
#include "image/decode.h"
#include "image/labels.h"
#include "image/preprocess.h"
#include "pipeline/top_k.h"
#include "profile/session.h"
#include "profile/zone.h"

namespace tandem::cli {

namespace {

struct ClassifyOptions {
  std::vector<std::string> images;
  std::string model;
  std::string labels;
  int top = 5;
  bool json = false;
  int batch = 8;
  image::PreprocessConfig pre;
  std::vector<float> mean, std;
  CommonOptions common;
};

struct Slot {
  std::string error;  // empty when the image was decoded
};

// Decodes and preprocesses images [first, first+n) into batch rows, on up to
// `workers` threads; each thread keeps its own decoder state and scratch.
std::vector<Slot> prepare_batch(const ClassifyOptions& o, size_t first, size_t n, float* batch) {
  std::vector<Slot> slots(n);
  size_t per = o.pre.crop * size_t(o.pre.crop) * 3;
  run_workers(n, [&](size_t w, size_t workers) {
    TANDEM_THREAD_NAME("decoder-" + std::to_string(w));
    image::Preprocessor pre(o.pre);
    for (size_t i = w; i < n; i += workers) {
      try {
        TANDEM_ZONE_CAT("decode+preprocess", "image");
        // Decode at the smallest DCT scale whose shorter side still covers
        // the resize target.
        image::Image img = image::decode_image_file(o.images[first + i], o.pre.resize, o.pre.resize);
        pre.run(img, std::span<float>(batch + i * per, per));
      } catch (const std::exception& e) {
        slots[i].error = e.what();
        std::fill(batch + i * per, batch + (i + 1) * per, 0.f);
      }
    }
  });
  return slots;
}

void print_result(const ClassifyOptions& o, const std::string& path, const std::vector<std::pair<int, float>>& best,
                  const std::vector<std::string>& labels) {
  auto name = [&](int c) { return size_t(c) < labels.size() ? labels[size_t(c)] : "class " + std::to_string(c); };
  if (o.json) {
    nlohmann::json top = nlohmann::json::array();
    for (auto [c, p] : best) top.push_back({{"index", c}, {"label", name(c)}, {"score", p}});
    fmt::print("{}\n", nlohmann::json{{"path", path}, {"top", top}}.dump());
    return;
  }
  fmt::print("{}\n", path);
  for (auto [c, p] : best) fmt::print("  {:6.2f}%  {}\n", 100.0 * p, name(c));
}

int classify_command(ClassifyOptions& o) {
  if (o.model.empty()) {  // the default model is the detector: tags instead of ImageNet classes
    DetectOptions d;
    d.images = o.images;
    d.json = o.json;
    d.batch = o.batch;
    d.common = o.common;
    return detect_command(d);
  }
  profile::TraceSession trace(session_outputs(o.common));
  if (!o.mean.empty()) std::copy_n(o.mean.begin(), 3, o.pre.mean.begin());
  if (!o.std.empty()) std::copy_n(o.std.begin(), 3, o.pre.std.begin());
  check(o.pre.crop <= o.pre.resize, "--crop must not exceed --resize");
  Session s = open_model(o.model, o.common);
  check(s.input_names().size() == 1, "classify needs a model with one image input", {o.model, "", "", ""});
  std::vector<std::string> labels = o.labels.empty() ? image::imagenet_labels() : image::load_labels(o.labels);
  int failures = 0;
  for (size_t first = 0; first < o.images.size(); first += size_t(o.batch)) {
    size_t n = std::min(o.images.size() - first, size_t(o.batch));
    Tensor batch = Tensor::empty(DType::f32, {int64_t(n), 3, o.pre.crop, o.pre.crop});
    std::vector<Slot> slots = prepare_batch(o, first, n, batch.data<float>());
    Tensor logits = s.run({batch})[0];
    check(logits.rank() == 2 && logits.dim(0) == int64_t(n),
          "model output " + logits.desc().str() + " is not [batch, classes]", {o.model, "", "", ""});
    int classes = int(logits.dim(1));
    for (size_t i = 0; i < n; ++i) {
      const std::string& path = o.images[first + i];
      if (!slots[i].error.empty()) {
        ++failures;
        fmt::print(stderr, "tandem: {}\n", slots[i].error);
        if (o.json) fmt::print("{}\n", nlohmann::json{{"path", path}, {"error", slots[i].error}}.dump());
        continue;
      }
      print_result(o, path, pipeline::softmax_top_k(logits.data<float>() + i * size_t(classes), classes, o.top), labels);
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

void add_classify_command(CLI::App& app) {
  auto o = std::make_shared<ClassifyOptions>();
  CLI::App* sub = app.add_subcommand("classify", "Classify images with an ImageNet-style model");
  sub->add_option("images", o->images, "JPEG or PNG files")->required();
  sub->add_option("--model,-m", o->model,
                  "Classification model (.onnx), input [N,3,H,W]; without one, the shipped detector tags the images");
  sub->add_option("--labels", o->labels, "Class names, one per line (default: ImageNet's, from python3-torchvision)");
  sub->add_option("--top,-k", o->top, "Classes to print per image")->check(CLI::PositiveNumber);
  sub->add_flag("--json", o->json, "One JSON object per line");
  sub->add_option("--batch", o->batch, "Images per inference batch")->check(CLI::PositiveNumber);
  sub->add_option("--resize", o->pre.resize, "Shorter side after resizing")->check(CLI::PositiveNumber);
  sub->add_option("--crop", o->pre.crop, "Center crop size")->check(CLI::PositiveNumber);
  sub->add_option("--mean", o->mean, "Per-channel mean (RGB, on x/255)")->expected(3);
  sub->add_option("--std", o->std, "Per-channel std (RGB)")->expected(3);
  add_common_options(sub, o->common);
  on_run(sub, [o] { return classify_command(*o); });
}

}  // namespace tandem::cli
