// Does the detector find the same objects in a smaller JPEG decode? Runs
// the COCO detector (CenterNet, on the CPU, fp32) on each photo decoded
// DCT-scaled to cover a reference minimum (the network's input, 512: a
// 12-MP photo decodes at 1/4) and to cover each candidate minimum (378: the
// same photo at 1/8, 504x378, then stretched up to 512x512), exactly as
// `tandem tag` decodes (image::decode_image_into, EXIF upright, progressive
// files at 1/8 reading only the scans that scale needs), and compares:
// a candidate "512c" decodes to cover 512 with progressive files' luma
// refinement scans skipped (DecodeOptions::coarse_progressive); the
// reference decodes every scan.
//   labels: the tags (classes with a detection >= --min-score) are the same;
//   objects: every detection >= --min-score on either side has one of the
//     same class on the other (the best IoU >= 0.5, counterpart down to
//     --floor so a score sliding across the threshold still pairs up), with
//     IoU >= --iou and |score difference| <= --score.
// Prints a table per candidate, the photos that differ, and one JSON line.
//
//   build/bench/detector_dct_scale [--model M] [--min 512,512c,378] [--batch 4]
//       [--threads N] [--limit N] [--min-score 0.25] [--floor 0.15]
//       [--iou 0.9] [--score 0.02] PATH...
//
// PATH: JPEG files or folders (searched recursively for .jpg/.jpeg). The
// first --min is the reference.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "pipeline/detection.h"
#include "pipeline/detector.h"
#include "pipeline/model_store.h"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

// A decode to compare: the minimum side it covers, and whether progressive
// files skip luma's refinement scans.
struct Decode {
  int min = 0;
  bool coarse = false;
  std::string name() const { return std::to_string(min) + (coarse ? "c" : ""); }
};

struct Options {
  std::string model;
  std::vector<Decode> mins{{512}, {378}};
  int batch = 4, threads = 0, limit = 0;
  float min_score = 0.25f, floor = 0.15f, iou = 0.9f, score = 0.02f;
  std::vector<std::string> paths;
};

std::vector<Decode> parse_decodes(const std::string& s) {
  std::vector<Decode> r;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, comma - at);
    const bool coarse = !item.empty() && item.back() == 'c';
    r.push_back({std::stoi(coarse ? item.substr(0, item.size() - 1) : item), coarse});
    at = comma + 1;
  }
  return r;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      check(i + 1 < argc, a + " needs a value");
      return argv[++i];
    };
    if (a == "--model")
      o.model = value();
    else if (a == "--min")
      o.mins = parse_decodes(value());
    else if (a == "--batch")
      o.batch = std::stoi(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--limit")
      o.limit = std::stoi(value());
    else if (a == "--min-score")
      o.min_score = std::stof(value());
    else if (a == "--floor")
      o.floor = std::stof(value());
    else if (a == "--iou")
      o.iou = std::stof(value());
    else if (a == "--score")
      o.score = std::stof(value());
    else if (a.rfind("--", 0) == 0)
      throw Error("unknown option " + a);
    else
      o.paths.push_back(a);
  }
  check(!o.paths.empty() && o.mins.size() >= 2 && o.batch > 0,
        "usage: detector_dct_scale [--min REF,CAND...] PATH...");
  return o;
}

std::vector<std::string> jpeg_files(const Options& o) {
  std::vector<std::string> files;
  auto is_jpeg = [](const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return e == ".jpg" || e == ".jpeg";
  };
  for (const std::string& p : o.paths) {
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && is_jpeg(e.path())) files.push_back(e.path().string());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  if (o.limit > 0 && files.size() > size_t(o.limit)) files.resize(size_t(o.limit));
  return files;
}

// One photo under one decode minimum.
struct Seen {
  std::string scale;  // "2/8 1008x756"
  std::vector<pipeline::Detection> dets;
};

// Decodes files [first, first + n) covering min x min, runs the detector.
std::vector<Seen> detect(pipeline::Detector& det, pipeline::DetectorInput& input,
                         const std::vector<std::string>& files, size_t first, size_t n,
                         const Decode& how) {
  Tensor batch = Tensor::empty(DType::f32, {int64_t(n), det.input_height(), det.input_width(), 3});
  std::vector<std::pair<int, int>> sizes(n);
  std::vector<Seen> seen(n);
  image::DecodeOptions opt;  // the tagger's defaults, its DCT-scaling target set
  opt.min_width = opt.min_height = how.min;
  opt.coarse_progressive = how.coarse;
  image::Image img;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<uint8_t> bytes = image::read_file_bytes(files[first + i], opt.max_file_bytes);
    image::decode_image_into(img, bytes, opt, files[first + i]);
    // DCT scales are n/8; TJSCALED rounds the size up.
    const long eighths = std::lround(8.0 * img.width / img.full_width);
    seen[i].scale = fmt::format("{}/8 {}x{}", eighths, img.width, img.height);
    sizes[i] = {img.full_width, img.full_height};
    input.run(img, batch.data<float>() + i * input.floats());
  }
  std::vector<std::vector<pipeline::Detection>> dets = det.detect(batch, sizes);
  for (size_t i = 0; i < n; ++i) seen[i].dets = std::move(dets[i]);
  return seen;
}

// How the candidate's detections of one photo differ from the reference's.
struct Diff {
  std::vector<std::string> notes;         // empty: the same by every criterion
  std::vector<float> ious, score_deltas;  // of the matched objects
  int objects = 0, unmatched = 0;
};

std::set<std::string> labels_of(const std::vector<pipeline::Detection>& dets, float min_score,
                                const std::vector<std::string>& names) {
  std::set<std::string> r;
  for (const auto& d : dets)
    if (d.score >= min_score) r.insert(pipeline::label_of(d.class_id, names));
  return r;
}

// Pairs each detection of `a` (>= min_score) with the best-IoU detection of
// the same class in `b` (>= floor); `side` names `a` in the notes; only
// `record` counts the pairs (once, from the reference's side).
void match(const std::vector<pipeline::Detection>& a, const std::vector<pipeline::Detection>& b,
           const Options& o, const std::vector<std::string>& names, bool record, const char* side,
           Diff& diff) {
  for (const auto& d : a) {
    if (d.score < o.min_score) continue;
    const pipeline::Detection* best = nullptr;
    float best_iou = 0.5f;
    for (const auto& e : b) {
      if (e.class_id != d.class_id || e.score < o.floor) continue;
      const float v = pipeline::iou(d.box, e.box);
      if (v >= best_iou) best_iou = v, best = &e;
    }
    const std::string label = pipeline::label_of(d.class_id, names);
    if (!best) {
      ++diff.unmatched;
      diff.notes.push_back(fmt::format("{} {:.3f} only in the {}", label, d.score, side));
      continue;
    }
    if (!record) continue;
    ++diff.objects;
    const float delta = std::fabs(best->score - d.score);
    diff.ious.push_back(best_iou);
    diff.score_deltas.push_back(delta);
    if (best_iou < o.iou || delta > o.score)
      diff.notes.push_back(fmt::format("{} IoU {:.3f}, score {:.3f} -> {:.3f}", label, best_iou,
                                       d.score, best->score));
  }
}

Diff compare(const Seen& ref, const Seen& cand, const Options& o,
             const std::vector<std::string>& names) {
  Diff diff;
  const std::set<std::string> la = labels_of(ref.dets, o.min_score, names),
                              lb = labels_of(cand.dets, o.min_score, names);
  if (la != lb) {
    std::string s;
    for (const auto& l : la) s += (lb.count(l) ? " " : " -") + l;
    for (const auto& l : lb)
      if (!la.count(l)) s += " +" + l;
    diff.notes.push_back("labels:" + s);
  }
  match(ref.dets, cand.dets, o, names, true, "reference", diff);
  match(cand.dets, ref.dets, o, names, false, "candidate", diff);
  return diff;
}

struct Totals {
  int images = 0, differing = 0, label_sets = 0, objects = 0, unmatched = 0, low_iou = 0,
      score_off = 0;
  float worst_iou = 1.f, worst_delta = 0.f;
  std::map<std::string, int> decodes;  // candidate decode size -> photos
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const std::vector<std::string> files = jpeg_files(o);
    pipeline::DetectorOptions dopt;
    dopt.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
    dopt.threads = o.threads;
    dopt.min_score = o.floor;  // matching looks below the reported threshold
    pipeline::Detector det(dopt);
    pipeline::DetectorInput input = det.make_input();
    std::vector<Totals> totals(o.mins.size());
    for (size_t first = 0; first < files.size(); first += size_t(o.batch)) {
      const size_t n = std::min(size_t(o.batch), files.size() - first);
      const std::vector<Seen> ref = detect(det, input, files, first, n, o.mins[0]);
      for (size_t c = 1; c < o.mins.size(); ++c) {
        const std::vector<Seen> cand = detect(det, input, files, first, n, o.mins[c]);
        Totals& t = totals[c];
        for (size_t i = 0; i < n; ++i) {
          const Diff d = compare(ref[i], cand[i], o, det.labels());
          ++t.images;
          ++t.decodes[ref[i].scale + " -> " + cand[i].scale];
          t.objects += d.objects;
          t.unmatched += d.unmatched;
          for (float v : d.ious) t.worst_iou = std::min(t.worst_iou, v), t.low_iou += v < o.iou;
          for (float v : d.score_deltas)
            t.worst_delta = std::max(t.worst_delta, v), t.score_off += v > o.score;
          if (d.notes.empty()) continue;
          ++t.differing;
          t.label_sets += d.notes.front().rfind("labels:", 0) == 0;
          std::string all;
          for (const auto& note : d.notes) all += (all.empty() ? "" : "; ") + note;
          fmt::print("min {}: {}: {} -> {}: {}\n", o.mins[c].name(), files[first + i], ref[i].scale,
                     cand[i].scale, all);
        }
      }
      std::fflush(stdout);
    }
    std::string json = "{\"photos\": " + std::to_string(files.size()) +
                       ", \"reference_min\": \"" + o.mins[0].name() + "\"" + ", \"candidates\": [";
    fmt::print(
        "\n| min | photos | differing | label sets | objects | unmatched | IoU < {} | |d score| > "
        "{} | worst IoU | worst |d score| |\n",
        o.iou, o.score);
    fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t c = 1; c < o.mins.size(); ++c) {
      const Totals& t = totals[c];
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.3f} | {:.3f} |\n", o.mins[c].name(),
                 t.images, t.differing, t.label_sets, t.objects, t.unmatched, t.low_iou,
                 t.score_off, t.worst_iou, t.worst_delta);
      for (const auto& [sizes, count] : t.decodes)
        fmt::print("  min {}: {} photos decoded {}\n", o.mins[c].name(), count, sizes);
      json += fmt::format(
          "{}{{\"min\": \"{}\", \"photos\": {}, \"differing\": {}, \"label_sets\": {}, \"objects\": "
          "{}, "
          "\"unmatched\": {}, \"low_iou\": {}, \"score_off\": {}, \"worst_iou\": {:.4f}, "
          "\"worst_score_delta\": {:.4f}}}",
          c > 1 ? ", " : "", o.mins[c].name(), t.images, t.differing, t.label_sets, t.objects, t.unmatched,
          t.low_iou, t.score_off, t.worst_iou, t.worst_delta);
    }
    fmt::print("{}]}}\n", json);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "detector_dct_scale: {}\n", e.what());
    return 1;
  }
}
