// `tandem detect IMAGE... [--model M]`: objects and tags for photos. The
// detector (default: the shipped COCO CenterNet) is loaded once; images are
// decoded (DCT-scaled JPEG, upright per EXIF) and resized on all cores into
// one batch; the network runs the batch; boxes come back in pixels of the
// upright full-size image. A bad image is reported and skipped.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detect.h"
#include "cli/parallel.h"
#include "core/error.h"
#include "image/decode.h"
#include "pipeline/model_store.h"
#include "profile/session.h"
#include "profile/zone.h"

namespace tandem::cli {

namespace {

struct Prepared {
  std::string error;
  std::pair<int, int> size;  // upright full-resolution (width, height)
};

// The error's message, naming the photo (a resize error does not know it).
std::string message_naming(const std::string& path, const std::exception& e) {
  if (const auto* te = dynamic_cast<const Error*>(&e))
    return te->with_context({path, "", "", ""}).what();
  return path + ": " + e.what();
}

std::vector<Prepared> prepare_batch(const DetectOptions& o, pipeline::Detector& det, size_t first,
                                    size_t n, float* batch) {
  std::vector<Prepared> slots(n);
  pipeline::DetectorInput probe = det.make_input();
  const size_t per = probe.floats();
  run_workers(n, [&](size_t w, size_t workers) {
    TANDEM_THREAD_NAME("decoder-" + std::to_string(w));
    pipeline::DetectorInput input = det.make_input();
    for (size_t i = w; i < n; i += workers) {
      try {
        TANDEM_ZONE_CAT("decode+resize", "image");
        image::Image img = image::decode_image_file(o.images[first + i], det.input_width(), det.input_height());
        slots[i].size = {img.full_width, img.full_height};
        input.run(img, batch + i * per);
      } catch (const std::exception& e) {
        slots[i].error = message_naming(o.images[first + i], e);
        std::fill(batch + i * per, batch + (i + 1) * per, 0.f);
      }
    }
  });
  return slots;
}

nlohmann::json to_json(const std::string& path, std::pair<int, int> size,
                       const std::vector<pipeline::Detection>& dets, const std::vector<std::string>& labels) {
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& d : dets)
    objects.push_back(object_json(pipeline::label_of(d.class_id, labels), d.score, d.box));
  nlohmann::json tags = nlohmann::json::array();
  for (const auto& t : pipeline::tags_of(dets, labels))
    tags.push_back({{"label", t.label}, {"count", t.count}, {"score", std::round(t.best_score * 1000.f) / 1000.f}});
  return {{"path", path}, {"width", size.first}, {"height", size.second}, {"objects", objects}, {"tags", tags}};
}

void print_text(const std::string& path, const std::vector<pipeline::Detection>& dets,
                const std::vector<std::string>& labels, bool boxes) {
  std::string tags = pipeline::format_tags(pipeline::tags_of(dets, labels));
  fmt::print("{}: {}\n", path, tags.empty() ? "(nothing found)" : tags);
  if (!boxes) return;
  for (const auto& d : dets)
    fmt::print("  {:<14} {:.2f}  [{:.0f}, {:.0f}, {:.0f}, {:.0f}]\n", pipeline::label_of(d.class_id, labels), d.score,
               d.box.x1, d.box.y1, d.box.x2, d.box.y2);
}

}  // namespace

nlohmann::json object_json(const std::string& label, float score, const pipeline::Box& box) {
  auto round1 = [](float v) { return std::round(v * 10.f) / 10.f; };
  return {{"label", label},
          {"score", std::round(score * 1000.f) / 1000.f},
          {"box", {round1(box.x1), round1(box.y1), round1(box.x2), round1(box.y2)}}};
}

int detect_command(DetectOptions& o) {
  profile::TraceSession trace(session_outputs(o.common));
  pipeline::DetectorOptions dopt;
  dopt.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  dopt.device = resolve_device(o.common);
  dopt.threads = o.common.threads;
  dopt.precision = graph_precision(o.common, dopt.device);
  dopt.rewrite = int8_rewrite(dopt.model, o.common);
  dopt.min_score = o.min_score;
  dopt.iou = o.iou;
  dopt.strict_device = o.common.strict_device;
  pipeline::Detector det(dopt);
  int failures = 0;
  for (size_t first = 0; first < o.images.size(); first += size_t(o.batch)) {
    size_t n = std::min(o.images.size() - first, size_t(o.batch));
    Tensor batch = Tensor::empty(DType::f32, {int64_t(n), det.input_height(), det.input_width(), 3});
    std::vector<Prepared> slots = prepare_batch(o, det, first, n, batch.data<float>());
    std::vector<std::pair<int, int>> sizes;
    for (const Prepared& p : slots) sizes.push_back(p.error.empty() ? p.size : std::pair<int, int>{1, 1});
    std::vector<std::vector<pipeline::Detection>> result = det.detect(batch, sizes);
    for (size_t i = 0; i < n; ++i) {
      const std::string& path = o.images[first + i];
      if (!slots[i].error.empty()) {
        ++failures;
        fmt::print(stderr, "tandem: {}\n", slots[i].error);
        if (o.json) fmt::print("{}\n", nlohmann::json{{"path", path}, {"error", slots[i].error}}.dump());
        continue;
      }
      if (o.json) fmt::print("{}\n", to_json(path, sizes[i], result[i], det.labels()).dump());
      else print_text(path, result[i], det.labels(), o.boxes);
    }
    std::fflush(stdout);
  }
  say_fallback_cost(det.session(), 0);
  return failures ? 1 : 0;
}

void add_detect_options(CLI::App* sub, DetectOptions& o) {
  sub->add_option("images", o.images, "JPEG or PNG files")->required();
  sub->add_flag("--json", o.json, "One JSON object per image and line: path, size, objects (label, score, box), tags");
  sub->add_flag("--boxes", o.boxes, "Also print every object's box (text output)");
  sub->add_option("--batch", o.batch, "Images per network run")->check(CLI::PositiveNumber);
  sub->add_option("--min-score", o.min_score, "Drop objects scoring below")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--iou", o.iou, "Per-class NMS overlap threshold")->check(CLI::Range(0.0, 1.0));
  o.common.precision = "auto";  // as tag: fp16 on a GPU
  add_common_options(sub, o.common);
}

void add_detect_command(CLI::App& app) {
  auto o = std::make_shared<DetectOptions>();
  CLI::App* sub = app.add_subcommand("detect", "Find objects (COCO classes) in photos and tag them");
  sub->add_option("--model,-m", o->model,
                  fmt::format("Detector: an installed model's name or a TF.js model.json (default: {})",
                              pipeline::kDefaultModel));
  add_detect_options(sub, *o);
  on_run(sub, [o] { return detect_command(*o); });
}

}  // namespace tandem::cli
