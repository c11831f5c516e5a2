// `tandem faces PHOTO...`: the faces in photos, each with its box, six
// landmarks, an age and gender estimate and (with --descriptors) the
// recognition model's descriptor. BlazeFace finds the faces on the whole
// photo stretched to 256x256; each face is then decoded again, only its
// region, at the scale FaceRes's 224x224 input needs (pipeline/
// face_crop.h), and the crops run through FaceRes in batches.
#include <fmt/core.h>

#include <cmath>
#include <thread>
#include <nlohmann/json.hpp>

#include "cli/calibration_data.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/parallel.h"
#include "core/error.h"
#include "core/shape.h"
#include "graph/post_training.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "pipeline/face_crop.h"
#include "pipeline/face_detector.h"
#include "pipeline/face_embedder.h"
#include "pipeline/face_stage.h"
#include "profile/session.h"
#include "profile/zone.h"

namespace tandem::cli {

namespace {

struct FacesOptions {
  std::vector<std::string> images;
  bool json = false, descriptors = false;
  int batch = 8;
  float min_score = 0.5f;
  CommonOptions common;
};

// One photo of a batch: its bytes (kept for the face crops) and size, or
// why it could not be read.
struct Photo {
  std::vector<uint8_t> bytes;
  std::pair<int, int> size;
  std::string error;
};

std::string message_naming(const std::string& path, const std::exception& e) {
  if (const auto* te = dynamic_cast<const Error*>(&e)) return te->with_context({path, "", "", ""}).what();
  return path + ": " + e.what();
}

// Reads and decodes photos [first, first + n) of `paths` into the detector's batch.
std::vector<Photo> read_batch(const std::vector<std::string>& paths, const pipeline::FaceDetector& det,
                              size_t first, size_t n, float* batch) {
  std::vector<Photo> photos(n);
  const image::PreprocessConfig config = det.input_config();
  run_workers(n, [&](size_t w, size_t workers) {
    image::Preprocessor pre(config);
    image::DecodeOptions opt;
    opt.min_width = opt.min_height = det.input_size();
    image::Image img;
    for (size_t i = w; i < n; i += workers) {
      const std::string& path = paths[first + i];
      float* slot = batch + i * pre.output_size();
      try {
        TANDEM_ZONE_CAT("read+decode+resize", "faces");
        photos[i].bytes = image::read_file_bytes(path, opt.max_file_bytes);
        image::decode_image_into(img, photos[i].bytes, opt, path);
        photos[i].size = {img.full_width, img.full_height};
        pre.run(img, {slot, pre.output_size()});
      } catch (const std::exception& e) {
        photos[i].error = message_naming(path, e);
        std::fill(slot, slot + pre.output_size(), 0.f);
      }
    }
  });
  return photos;
}

float round_to(float v, float step) { return std::round(v / step) * step; }

nlohmann::json face_json(const pipeline::Face& f, const pipeline::FaceTraits* t, bool descriptors) {
  nlohmann::json marks = nlohmann::json::array();
  for (const auto& p : f.landmarks) marks.push_back({round_to(p.x, 0.1f), round_to(p.y, 0.1f)});
  nlohmann::json j = {{"score", round_to(f.score, 0.001f)},
                      {"box", {round_to(f.box.x1, 0.1f), round_to(f.box.y1, 0.1f), round_to(f.box.x2, 0.1f),
                               round_to(f.box.y2, 0.1f)}},
                      {"crop", {f.crop.x1, f.crop.y1, f.crop.x2, f.crop.y2}},
                      {"landmarks", marks}};
  if (t) {
    j["age"] = t->age;
    j["gender"] = t->gender_score > 0.5f ? "male" : "female";
    j["gender_score"] = round_to(t->gender_score, 0.001f);
    if (descriptors) j["descriptor"] = t->descriptor;
  }
  return j;
}

void print_text(const std::string& path, const std::vector<pipeline::Face>& faces,
                const std::vector<const pipeline::FaceTraits*>& traits) {
  fmt::print("{}: {} face{}\n", path, faces.size(), faces.size() == 1 ? "" : "s");
  for (size_t i = 0; i < faces.size(); ++i) {
    const auto& b = faces[i].box;
    fmt::print("  {:.2f}  [{:.0f}, {:.0f}, {:.0f}, {:.0f}]", faces[i].score, b.x1, b.y1, b.x2, b.y2);
    if (traits[i])
      fmt::print("  age {:.0f}, {}", traits[i]->age, traits[i]->gender_score > 0.5f ? "male" : "female");
    fmt::print("\n");
  }
}

// The faces of --calibrate's photos, found and cropped as the faces to
// describe are: [F, size, size, 3], at most `limit` of them.
Tensor calibration_crops(const FacesOptions& o, pipeline::FaceDetector& det, int64_t size, int64_t limit) {
  const std::vector<std::string> paths = calibration_photos(o.common.calibrate);
  const int64_t floats = size * size * 3;
  std::vector<float> crops;
  pipeline::FaceCropper cropper{int(size)};
  const int in = det.input_size();
  for (size_t first = 0; first < paths.size() && int64_t(crops.size()) < limit * floats; first += size_t(o.batch)) {
    const size_t n = std::min(paths.size() - first, size_t(o.batch));
    Tensor batch = Tensor::empty(DType::f32, {int64_t(n), in, in, 3});
    std::vector<Photo> photos = read_batch(paths, det, first, n, batch.data<float>());
    std::vector<std::pair<int, int>> sizes;
    for (const Photo& p : photos) sizes.push_back(p.error.empty() ? p.size : std::pair<int, int>{1, 1});
    const std::vector<std::vector<pipeline::Face>> faces = det.detect(batch, sizes);
    for (size_t i = 0; i < n; ++i) {
      if (!photos[i].error.empty()) {
        fmt::print(stderr, "tandem: {}: skipped: {}\n", paths[first + i], photos[i].error);
        continue;
      }
      for (const pipeline::Face& f : faces[i]) {
        if (int64_t(crops.size()) >= limit * floats) break;
        crops.resize(crops.size() + size_t(floats));
        cropper.crop(photos[i].bytes, f, image::DecodeOptions{}, paths[first + i],
                     crops.data() + crops.size() - size_t(floats));
      }
    }
  }
  check(!crops.empty(), "no face found in the photos under " + o.common.calibrate + " to calibrate FaceRes with");
  const int64_t count = int64_t(crops.size()) / floats;
  Tensor t = Tensor::empty(DType::f32, {count, size, size, 3});
  std::copy(crops.begin(), crops.end(), t.data<float>());
  return t;
}

// --precision int8: FaceRes quantized on the faces of --calibrate's photos
// (the face detector stays in float).
Graph quantized_faceres(Graph g, const FacesOptions& o, pipeline::FaceDetector& det) {
  check(!o.common.calibrate.empty(), "--precision int8 needs --calibrate DIR: photos with faces");
  const Shape& in = g.value(g.inputs.at(0)).shape;
  check(in.size() == 4 && in[1] > 0, "FaceRes takes [N, S, S, 3] crops, got " + shape_str(in));
  const Tensor crops = calibration_crops(o, det, in[1], 64);
  PtqOptions p;
  p.threads = o.common.threads;
  p.float_layers = o.common.float_layers;
  // The GPU's integer convolutions (cuDNN's) take symmetric s8 activations only.
  p.activations = resolve_device(o.common).is_cpu() ? DType::u8 : DType::i8;
  PtqReport r;
  Graph q = quantize_post_training(std::move(g), batches_of(crops, 8), p, &r);
  fmt::print(stderr,
             "tandem: int8: FaceRes: {} of {} convolutions quantized ({} activations, {} calibration on {} faces of "
             "{}), descriptors move by {:.3g}\n",
             r.quantized, r.layers.size(), dtype_name(p.activations), calibration_method_name(r.method),
             crops.dim(0), o.common.calibrate, r.error);
  return q;
}

int faces_command(FacesOptions& o) {
  profile::TraceSession trace(session_outputs(o.common));
  pipeline::FaceDetectorOptions dopt;
  dopt.device = resolve_device(o.common);
  dopt.precision = graph_precision(o.common, dopt.device);
  dopt.threads = o.common.threads;
  dopt.min_score = o.min_score;
  dopt.strict_device = o.common.strict_device;
  pipeline::FaceDetector det(dopt);
  pipeline::FaceEmbedderOptions eopt;
  eopt.device = dopt.device, eopt.precision = dopt.precision, eopt.threads = dopt.threads;
  eopt.strict_device = dopt.strict_device;
  if (o.common.precision == "int8")
    eopt.rewrite = [&o, &det](Graph g) { return quantized_faceres(std::move(g), o, det); };
  pipeline::FaceEmbedder embedder(eopt);
  const int in = det.input_size();
  int failures = 0;
  for (size_t first = 0; first < o.images.size(); first += size_t(o.batch)) {
    const size_t n = std::min(o.images.size() - first, size_t(o.batch));
    Tensor batch = Tensor::empty(DType::f32, {int64_t(n), in, in, 3});
    std::vector<Photo> photos = read_batch(o.images, det, first, n, batch.data<float>());
    std::vector<std::pair<int, int>> sizes;
    for (const Photo& p : photos) sizes.push_back(p.error.empty() ? p.size : std::pair<int, int>{1, 1});
    std::vector<std::vector<pipeline::Face>> faces = det.detect(batch, sizes);
    std::vector<std::string> names(o.images.begin() + std::ptrdiff_t(first),
                                   o.images.begin() + std::ptrdiff_t(first + n));
    for (size_t i = 0; i < n; ++i)
      if (!photos[i].error.empty()) faces[i].clear();
    const pipeline::PhotoBytes bytes = [&](size_t i, std::vector<uint8_t>&) {
      return std::span<const uint8_t>(photos[i].bytes);
    };
    const std::vector<std::vector<pipeline::DescribedFace>> described =
        pipeline::describe_faces(embedder, faces, bytes, names, image::DecodeOptions{},
                                 pipeline::own_threads(int(std::max(1u, std::thread::hardware_concurrency()))));
    for (size_t i = 0; i < n; ++i) {
      const std::string& path = o.images[first + i];
      if (!photos[i].error.empty()) {
        ++failures;
        fmt::print(stderr, "tandem: {}\n", photos[i].error);
        if (o.json) fmt::print("{}\n", nlohmann::json{{"path", path}, {"error", photos[i].error}}.dump());
        continue;
      }
      std::vector<const pipeline::FaceTraits*> mine;
      nlohmann::json list = nlohmann::json::array();
      for (size_t f = 0; f < faces[i].size(); ++f) {
        const pipeline::DescribedFace& d = described[i][f];
        if (!d.traits) fmt::print(stderr, "tandem: {}\n", d.error);
        mine.push_back(d.traits ? &*d.traits : nullptr);
        list.push_back(face_json(faces[i][f], mine.back(), o.descriptors));
      }
      if (o.json)
        fmt::print("{}\n", nlohmann::json{{"path", path},
                                          {"width", photos[i].size.first},
                                          {"height", photos[i].size.second},
                                          {"faces", list}}
                               .dump());
      else
        print_text(path, faces[i], mine);
    }
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}

}  // namespace

void add_faces_command(CLI::App& app) {
  auto o = std::make_shared<FacesOptions>();
  CLI::App* sub = app.add_subcommand("faces", "Find the faces in photos: boxes, landmarks, age and gender estimates");
  sub->add_option("images", o->images, "Photos (JPEG, PNG, WebP, HEIF)")->required();
  sub->add_flag("--json", o->json,
                "One JSON object per photo and line: path, width, height, faces (score, box, crop, landmarks, age, "
                "gender)");
  sub->add_flag("--descriptors", o->descriptors, "With --json: each face's recognition descriptor (1024 values)");
  sub->add_option("--batch", o->batch, "Photos per detector run")->check(CLI::PositiveNumber);
  sub->add_option("--min-score", o->min_score, "Drop faces scoring below")->check(CLI::Range(0.0, 1.0));
  o->common.precision = "auto";
  add_common_options(sub, o->common);
  on_run(sub, [o] { return faces_command(*o); });
}

}  // namespace tandem::cli
