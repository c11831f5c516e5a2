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

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/face_calibration.h"
#include "core/error.h"
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
    eopt.rewrite = [&o, &det](Graph g) { return quantized_faceres(std::move(g), o.common, det, o.batch); };
  pipeline::FaceEmbedder embedder(eopt);
  const int in = det.input_size();
  int failures = 0;
  for (size_t first = 0; first < o.images.size(); first += size_t(o.batch)) {
    const size_t n = std::min(o.images.size() - first, size_t(o.batch));
    Tensor batch = Tensor::empty(DType::f32, {int64_t(n), in, in, 3});
    std::vector<FacePhoto> photos = read_face_batch(o.images, det, first, n, batch.data<float>());
    std::vector<std::pair<int, int>> sizes;
    for (const FacePhoto& p : photos) sizes.push_back(p.error.empty() ? p.size : std::pair<int, int>{1, 1});
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
