// `tandem tag PATH...`: tag every photo under the given files and folders.
// The model is loaded once; decoding runs on every core while the network
// runs batch after batch (pipeline/tagger.h); a progress line while it runs,
// a summary at the end naming the stage that limited the run.
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detect.h"
#include "cli/face_calibration.h"
#include "cli/parallel.h"
#include "cli/progress.h"
#include "core/error.h"
#include "graph/session.h"
#include "image/decode.h"
#include "image/photo_metadata.h"
#include "pipeline/catalog.h"
#include "pipeline/exports.h"
#include "pipeline/gpu_jpeg.h"
#include "pipeline/model_store.h"
#include "pipeline/sql.h"
#include "pipeline/tag_profile.h"
#include "pipeline/tag_summary.h"
#include "pipeline/tagger.h"
#include "pipeline/walk.h"
#include "pipeline/work_queue.h"
#include "pipeline/xmp_sidecar.h"
#include "profile/session.h"
#include "profile/zone.h"

namespace tandem::cli {

namespace {

struct TagOptions {
  std::vector<std::string> paths;
  std::string model;
  int decoders = 0;
  int batch = 0;
  int top = 5;
  float min_score = -1.f;
  bool json = false;
  std::string catalog, jsonl, csv;
  bool xmp = false, force = false;
  bool print = false;           // per-photo lines on stdout even with a catalog or exports
  std::string nvjpeg = "auto";  // GPU JPEG decoding: auto, on, off
  int gpu_decoders = 2;
  int gpu_keep_mb = -1;  // GPU memory for decoded photos kept for their face crops; -1: default
  bool decode_only = false;
  bool exact_progressive = false;  // no image::DecodeOptions::coarse_progressive
  std::string faces = "auto";       // auto, on, off
  int face_threads = 0;             // threads cutting face crops; 0: the stage's default
  int face_batches = 0;  // batches whose faces are found at once; 0: 4 on a GPU, 1 on CPU
  bool queue = false;               // share the run with other workers through the catalog's queue
  double lease = 60;                // --queue: seconds a claim lasts unrenewed
  int claim = 0;                    // --queue: files per claim (0: 2 batches)
  double db_retry = 60;             // seconds a server catalog may be away before the run stops
  std::string thumbnails = "auto";  // auto (on with a catalog), on, off
  CommonOptions common;
};

struct Inputs {
  std::vector<pipeline::InputFile> files;
  int64_t ignored = 0;     // not images, duplicates, broken links
  int64_t skipped = 0;     // up to date in the catalog
  int64_t unreadable = 0;  // files and folders that could not be read (named as found)
  // Up to date, but tagged before the catalog kept EXIF metadata.
  std::vector<std::string> metadata_only;
};

// The paths given, absolute, so a catalog matches however a folder was named.
std::vector<std::string> absolute_roots(const std::vector<std::string>& paths) {
  std::vector<std::string> roots;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(p, ec);
    roots.push_back(ec ? p : abs.lexically_normal().string());
  }
  return roots;
}

// Images under the roots, less those the catalog already has for this model
// (and, when thumbnails are made, has them for).
Inputs collect(const std::vector<std::string>& roots, pipeline::Catalog* catalog, const std::string& model_id,
               bool force, const pipeline::ThumbnailStore* thumbnails) {
  pipeline::WalkResult w = pipeline::walk(roots);
  Inputs in;
  for (const auto& p : w.problems) {
    fmt::print(stderr, "tandem: {}: {}\n", p.path, p.reason);
    ++(p.unreadable ? in.unreadable : in.ignored);
  }
  in.ignored += int64_t(w.duplicates.size());
  for (const pipeline::WalkedFile& f : w.files) {
    // A photo's name on something else goes to the decoders, which fail it
    // with its path and what the bytes are, like any other bad photo.
    if (f.kind == pipeline::FileKind::other && !pipeline::has_photo_extension(f.path)) {
      ++in.ignored;
      continue;
    }
    if (catalog && !force) {
      const auto stored = catalog->stored(f.path, f.size, f.mtime_ns, model_id);
      // A tagged photo whose thumbnails went missing (a full disk, a
      // cleaned cache) is tagged again: the pass that makes thumbnails is
      // the one that decodes.
      const bool thumbnails_missing =
          stored == pipeline::Catalog::Stored::ok && thumbnails && !thumbnails->has(f.path, f.mtime_ns);
      if (stored != pipeline::Catalog::Stored::none && !thumbnails_missing) {
        ++in.skipped;
        if (stored == pipeline::Catalog::Stored::ok && catalog->metadata_pending(f.path, model_id))
          in.metadata_only.push_back(f.path);
        continue;
      }
    }
    in.files.push_back({f.path, f.size, f.mtime_ns});
  }
  return in;
}

// The EXIF of photos tagged before the catalog kept it, read from the files
// (no decode, no inference) and stored, a batch per transaction. A JPEG's
// EXIF is in its first 64 KiB; other formats may keep it anywhere, so a
// file whose first MiB holds none is read whole. A file that cannot be read
// now stays pending, named.
void backfill_metadata(pipeline::Catalog& catalog, const std::vector<std::string>& paths,
                       const std::string& model_id) {
  if (paths.empty()) return;
  TANDEM_ZONE_CAT("read EXIF of photos tagged before metadata", "tag");
  constexpr size_t kBatch = 256;
  constexpr int64_t kHead = int64_t(1) << 20;
  int64_t stored = 0;
  for (size_t first = 0; first < paths.size(); first += kBatch) {
    const size_t n = std::min(kBatch, paths.size() - first);
    std::vector<std::optional<image::PhotoMetadata>> read(n);
    std::vector<std::string> errors(n);
    run_workers(n, [&](size_t w, size_t workers) {
      for (size_t i = w; i < n; i += workers) {
        try {
          const std::string& path = paths[first + i];
          const std::vector<uint8_t> head = image::read_file_head(path, kHead);
          image::PhotoMetadata m = image::read_photo_metadata(head);
          if (m.empty() && int64_t(head.size()) == kHead)
            m = image::read_photo_metadata(
                image::read_file_bytes(path, image::DecodeOptions{}.max_file_bytes));
          read[i] = std::move(m);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      }
    });
    std::vector<std::pair<std::string, image::PhotoMetadata>> batch;
    for (size_t i = 0; i < n; ++i) {
      if (read[i])
        batch.emplace_back(paths[first + i], std::move(*read[i]));
      else
        fmt::print(stderr, "tandem: {}: metadata not read: {}\n", paths[first + i], errors[i]);
    }
    catalog.backfill_metadata(batch, model_id);
    stored += int64_t(batch.size());
  }
  fmt::print(stderr,
             "tandem: read the EXIF metadata of {} photos tagged before the catalog kept it\n",
             stored);
}

// --json: `detect --json`'s form (path, width, height, objects, tags) with
// ok, faces (score, box, age, gender_score; the person each joins is the
// catalog's, in its exports), and the error when the file failed.
void print_record(const pipeline::TagRecord& r, bool json) {
  if (json) {
    nlohmann::json tags = nlohmann::json::array();
    for (const auto& t : r.tags) tags.push_back({{"label", t.label}, {"score", std::round(t.score * 1000.f) / 1000.f}});
    nlohmann::json objects = nlohmann::json::array();
    for (const auto& d : r.objects) objects.push_back(object_json(d.label, d.score, d.box));
    nlohmann::json faces = nlohmann::json::array();
    for (const auto& f : r.faces) {
      nlohmann::json face = object_json("face", f.score, f.box);
      face.erase("label");
      face["age"] = f.age;
      face["gender_score"] = std::round(f.gender_score * 1000.f) / 1000.f;
      faces.push_back(std::move(face));
    }
    nlohmann::json j = {{"path", r.path},     {"ok", r.ok},         {"width", r.width},
                        {"height", r.height}, {"objects", objects}, {"tags", tags}, {"faces", faces}};
    if (!r.ok) j["error"] = r.error, j["error_kind"] = r.error_kind;
    fmt::print("{}\n", j.dump());
    return;
  }
  if (!r.ok) {
    fmt::print("{}: error ({}): {}\n", r.path, r.error_kind, r.error);
    return;
  }
  std::string tags;
  for (const auto& t : r.tags) tags += fmt::format("{}{} {:.2f}", tags.empty() ? "" : ", ", t.label, t.score);
  fmt::print("{}: {}\n", r.path, tags.empty() ? "(no tags)" : tags);
}

// nvJPEG decoders for --nvjpeg: none with "off", on the CPU or for a model
// whose input no PreprocessConfig describes; with "on" their absence is an
// error.
// Each opens on its own thread in the run (GpuJpegDecoder::open), while the
// CPU decoders start and the model is prepared.
std::vector<std::unique_ptr<pipeline::GpuJpegDecoder>> open_gpu_decoders(const TagOptions& o, Device device,
                                                                        const pipeline::TagModel& model) {
  std::vector<std::unique_ptr<pipeline::GpuJpegDecoder>> r;
  check(o.nvjpeg == "auto" || o.nvjpeg == "on" || o.nvjpeg == "off", "--nvjpeg takes auto, on or off");
  if (o.nvjpeg == "off" || o.gpu_decoders == 0) return r;
  std::string why;
  if (device.is_cpu()) why = "inference runs on the CPU";
  else if (!model.preprocess_config())
    why = "the GPU decoders cannot make this model's input";
  for (int i = 0; why.empty() && i < o.gpu_decoders; ++i)
    if (auto d =
            pipeline::gpu_jpeg_decoder_opened_later(device.index, *model.preprocess_config(), &why))
      r.push_back(std::move(d));
  if (!why.empty()) {
    check(o.nvjpeg != "on", "--nvjpeg on: no GPU JPEG decoder: " + why);
    if (!device.is_cpu()) fmt::print(stderr, "tandem: JPEGs decode on the CPU only: {}\n", why);
    r.clear();
  }
  return r;
}

// The face stage for --faces: none with "off"; with "auto" when the face
// models are installed and the model's batches hold whole photos (the
// detector); "on" makes either missing an error.
std::unique_ptr<pipeline::FaceStage> open_faces(const TagOptions& o, const pipeline::TagModelOptions& mo,
                                                const pipeline::TagModel& model) {
  check(o.faces == "auto" || o.faces == "on" || o.faces == "off", "--faces takes auto, on or off");
  if (o.faces == "off" || o.decode_only) return nullptr;
  const image::PreprocessConfig* input = model.preprocess_config();
  const bool whole_photo = input && pipeline::FaceStage::serves(*input);
  bool installed = true;
  for (const char* m : {"blazeface", "faceres"}) {
    try {
      pipeline::resolve_model(m);
    } catch (const Error&) {
      installed = false;
    }
  }
  if (o.faces == "auto" && (!installed || !whole_photo)) return nullptr;
  check(installed, "--faces on: the face models are not installed (scripts/install-models)");
  check(input != nullptr, "--faces on: this model's input is not a whole photo");
  pipeline::FaceStageOptions fo;
  fo.detector.device = fo.embedder.device = mo.device;
  fo.detector.precision = fo.embedder.precision = mo.precision;
  fo.detector.threads = fo.embedder.threads = mo.threads;
  fo.detector.strict_device = fo.embedder.strict_device = mo.strict_device;
  fo.crop_threads = o.face_threads;
  fo.decode.coarse_progressive = !o.exact_progressive;
  // --precision int8: FaceRes too, calibrated on the faces of --calibrate's photos.
  if (o.common.precision == "int8") fo.embedder.rewrite = faceres_int8_rewrite(o.common, fo.detector);
  TANDEM_ZONE_CAT("load face models", "tag");
  return std::make_unique<pipeline::FaceStage>(fo, *input);
}

// A server catalog that goes away (a restart, a network cut) is reconnected
// to for --db-retry seconds, saying so on stderr; then the run stops with
// the error, its unstored files left to a re-run or, in a queue, to the
// other workers once its leases run out.
pipeline::sql::Reconnect reconnect_policy(const TagOptions& o) {
  return {o.db_retry, [](const std::string& what) { fmt::print(stderr, "tandem: {}\n", what); }};
}

// What runs the model on one device: the model, its GPU JPEG decoders and
// its face stage, and the tagger over them. --device cuda:all opens one
// per GPU.
struct DeviceRun {
  std::unique_ptr<pipeline::TagModel> model;
  std::vector<std::unique_ptr<pipeline::GpuJpegDecoder>> gpu;
  std::unique_ptr<pipeline::FaceStage> faces;
  std::unique_ptr<pipeline::Tagger> tagger;
};

DeviceRun open_device_run(const TagOptions& o, const pipeline::TagModelOptions& mo) {
  DeviceRun r;
  // The GPU's context and libraries open while the model file is parsed.
  std::future<void> gpu_open;
  if (!mo.device.is_cpu())
    gpu_open = std::async(std::launch::async, [device = mo.device] {
      TANDEM_THREAD_NAME("open GPU");
      open_backend(device);
    });
  {
    TANDEM_ZONE_CAT("load model", "tag");
    r.model = pipeline::load_tag_model(mo);
  }
  if (gpu_open.valid()) gpu_open.get();  // its error, if any, is the model load's too
  r.gpu = open_gpu_decoders(o, mo.device, *r.model);
  r.faces = open_faces(o, mo, *r.model);
  // The faces of the photos the GPU decodes are cut from its full-size
  // decode, kept on the GPU until the face stage has found them.
  if (r.faces && !r.gpu.empty()) {
    const size_t keep = o.gpu_keep_mb >= 0
                            ? (size_t(o.gpu_keep_mb) << 20) / r.gpu.size()
                            : pipeline::default_kept_bytes(mo.device.index, int(r.gpu.size()));
    for (auto& d : r.gpu) d->keep_decoded(keep);
  }
  return r;
}

// Tags `files` on every device's pipeline at once, one run each: a
// pipeline's feed takes the next share of the files (32 batches) while a
// batch of its last is still left, so a slower GPU takes fewer and no
// pipeline drains between shares; the sink (the catalog, stdout) is called
// by one pipeline at a time. A failing pipeline stops the others' shares.
pipeline::TagStats run_on_devices(std::vector<DeviceRun>& runs, const std::vector<pipeline::InputFile>& files,
                                  const std::function<void(std::vector<pipeline::TagRecord>&)>& sink, int batch) {
  if (runs.size() == 1) return runs[0].tagger->run(files, sink);
  const auto start = std::chrono::steady_clock::now();
  const size_t share = size_t(32 * batch);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const auto next_share = [&] {
    const size_t b = failed ? files.size() : std::min(next.fetch_add(share), files.size());
    const size_t e = std::min(files.size(), b + share);
    return std::vector<pipeline::InputFile>(files.begin() + long(b), files.begin() + long(e));
  };
  std::mutex sink_mutex, error_mutex;
  std::exception_ptr error;
  const auto one_at_a_time = [&](std::vector<pipeline::TagRecord>& group) {
    std::lock_guard<std::mutex> lock(sink_mutex);
    sink(group);
  };
  std::vector<pipeline::TagStats> parts(runs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runs.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        pipeline::FileFeed feed(next_share, size_t(batch));
        parts[i] = runs[i].tagger->run(feed, one_at_a_time);
      } catch (...) {
        failed = true;
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  pipeline::TagStats total;
  for (const pipeline::TagStats& p : parts) pipeline::add_run(total, p);
  // The threads ran side by side: the run took the longest of them. Each
  // pipeline's decoders count once, as the summary's per-decoder shares
  // divide by them.
  total.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  total.decoders = 0;
  for (const pipeline::TagStats& p : parts) total.decoders += p.decoders;
  return total;
}

// One worker of a shared run (--queue): enqueues what it listed, then
// claims and tags files until the queue has nothing left that no live
// lease holds, waiting while other workers' leases may still run out.
pipeline::TagStats run_queue_worker(const TagOptions& o, pipeline::Catalog& catalog, pipeline::TagModel& model,
                                    const Inputs& in, pipeline::Tagger& tagger,
                                    const std::function<void(std::vector<pipeline::TagRecord>&)>& sink, int batch) {
  const auto start = std::chrono::steady_clock::now();
  pipeline::WorkQueue queue(o.catalog, model.id(), o.lease, reconnect_policy(o));
  const int64_t added = queue.enqueue(in.files);
  queue.start_renewing();
  fmt::print(stderr, "tandem: worker {}: {} of {} listed files added to the queue of {}\n", queue.worker(), added,
             in.files.size(), catalog.path());
  // One pipeline run over files that arrive claim by claim: the next claim
  // is asked for while a batch is still left (a batch outlasts a claim's
  // round trip many times over), so the decoders never wait for the
  // database and the pipeline never drains between claims. Small claims (2
  // batches) and little held ahead keep the last files shared among the
  // workers.
  const int claim = o.claim > 0 ? o.claim : 2 * batch;
  pipeline::TagStats total;
  for (;;) {
    pipeline::FileFeed feed([&] { return queue.claim(claim); }, size_t(std::min(batch, claim)));
    pipeline::TagStats part = tagger.run(feed, sink);
    const bool got_files = part.files > 0;
    pipeline::add_run(total, part);
    if (got_files) continue;
    if (queue.finished()) break;
    // Files under other workers' leases: done soon, or theirs to lose.
    std::this_thread::sleep_for(std::chrono::duration<double>(std::clamp(queue.wait_s() + 0.1, 0.2, 2.0)));
  }
  queue.stop();
  total.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total;
}

int tag_command(TagOptions& o) {
  // Threads waiting on the GPU block rather than spin (unless the user set
  // TANDEM_CUDA_SYNC): the decoders need every core, and a spinning wait took
  // one each from the inference thread and the GPU JPEG decoder threads
  // (H200 machine, 3,500 photos: 430 img/s blocking against 407 spinning).
  ::setenv("TANDEM_CUDA_SYNC", "block", /*overwrite=*/0);
  profile::TraceSession trace(session_outputs(o.common));
  pipeline::TagModelOptions mo;
  mo.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  const std::vector<Device> devices = resolve_devices(o.common);
  mo.device = devices.front();
  mo.precision = graph_precision(o.common, mo.device);
  mo.rewrite = int8_rewrite(mo.model, o.common);
  mo.threads = o.common.threads;
  mo.top = o.top;
  mo.min_score = o.min_score;
  mo.strict_device = o.common.strict_device;
  bool on_cpu = mo.device.is_cpu();
  const pipeline::TagRunFacts facts{on_cpu, mo.precision == Precision::fp16 || mo.precision == Precision::bf16};
  trace.set_verdict([facts](const profile::ProfileSummary& s) { return pipeline::tag_profile_verdict(s, facts); });
  if (on_cpu && o.common.threads == 0)  // the decoders run on every core too (default_decoders)
    mo.threads = std::max(1, int(std::thread::hardware_concurrency()) / 2);
  std::vector<DeviceRun> runs;
  for (const Device& d : devices) {
    pipeline::TagModelOptions m = mo;
    m.device = d;
    runs.push_back(open_device_run(o, m));
  }
  pipeline::TagModel* const model = runs.front().model.get();
  check(!o.queue || runs.size() == 1,
        "--queue with --device cuda:all: start one worker per GPU (--device cuda:N), each a worker of the queue");
  if (o.decode_only) o.catalog.clear(), o.jsonl.clear(), o.csv.clear(), o.xmp = false;
  check(!o.queue || !o.catalog.empty(), "--queue needs --catalog: the queue is in the catalog");
  // Every worker of a shared run would open every file again, each undoing
  // the others' work: a forced re-tag is one worker's job.
  check(!o.queue || !o.force, "--force with --queue: tag again with one worker, without --queue");
  std::unique_ptr<pipeline::Catalog> catalog;
  if (!o.catalog.empty()) {
    catalog = std::make_unique<pipeline::Catalog>(o.catalog);
    catalog->set_reconnect(reconnect_policy(o));
  }
  // Thumbnails in the shared cache file managers read; beside the catalog
  // when that cannot be written.
  std::unique_ptr<pipeline::ThumbnailStore> thumbnails;
  if (!o.decode_only && (o.thumbnails == "on" || (o.thumbnails == "auto" && catalog))) {
    const std::string root = pipeline::default_thumbnail_root();
    const std::string fallback = catalog ? pipeline::catalog_thumbnail_folder(o.catalog) : root;
    thumbnails = std::make_unique<pipeline::ThumbnailStore>(root, fallback);
  }
  Inputs in;
  {
    TANDEM_ZONE_CAT("list files (walk + catalog lookups)", "tag");
    const std::vector<std::string> roots = absolute_roots(o.paths);
    if (catalog) catalog->add_roots(roots);
    in = collect(roots, catalog.get(), model->id(), o.force, thumbnails.get());
  }
  if (catalog) backfill_metadata(*catalog, in.metadata_only, model->id());
  pipeline::TaggerOptions to;
  // Each GPU's pipeline gets its share of the cores for its CPU decoders.
  to.decoders = o.decoders > 0 || runs.size() == 1
                    ? o.decoders
                    : std::max(2, pipeline::default_decoders() / int(runs.size()));
  to.batch = o.batch > 0 ? o.batch : (on_cpu ? 4 : 128);
  // On a GPU, the model's preparation (~1 s: weights, algorithm choice) runs
  // while the decoders fill batches: three buffers of 128 filled in 0.6 s
  // and the decoders then waited (H200 machine, 16 decoders). Five hold them
  // over it, at 77 MB of pinned memory each for a 224x224 model.
  if (!on_cpu && !o.decode_only) to.buffers = 5;
  to.decode_only = o.decode_only;
  to.decode.coarse_progressive = !o.exact_progressive;
  // On a GPU a batch's faces wait for its slowest region decode (a
  // progressive file's, up to 0.3 s): four batches at once kept the
  // decoders busier than two (H200 host, 3,500 photos with people: 327 against
  // 301 img/s).
  to.face_threads = o.face_batches > 0 ? o.face_batches : (on_cpu ? 1 : 4);
  to.gpu_decoders_required = o.nvjpeg == "on";
  if (const char* v = std::getenv("TANDEM_BASELINE_TO_GPU"); v && std::string(v) == "0")
    to.baseline_to_gpu = false;
  if (const char* v = std::getenv("TANDEM_CPU_DECODER_NICE")) to.cpu_decoder_nice = std::atoi(v);
  to.thumbnails = thumbnails.get();
  std::vector<const pipeline::TagProgress*> progress_parts;
  for (DeviceRun& r : runs) {
    pipeline::TaggerOptions t = to;
    for (auto& d : r.gpu) t.gpu_decoders.push_back(d.get());
    t.faces = r.faces.get();
    r.tagger = std::make_unique<pipeline::Tagger>(*r.model, t);
    progress_parts.push_back(&r.tagger->progress());
  }
  // Per-file lines on stdout unless the results go to files only.
  bool print = o.json || (!o.decode_only &&
                          (o.print || (o.catalog.empty() && o.jsonl.empty() && o.csv.empty())));
  std::vector<pipeline::FileRecord> kept;  // for exports without a catalog
  pipeline::TagStats stats;
  {
    ProgressPrinter progress(progress_parts);
    std::function<void(std::span<const pipeline::FileRecord>)> sidecars;
    if (o.xmp) sidecars = [](std::span<const pipeline::FileRecord> records) {
      for (const auto& r : records) {
        if (!r.ok) continue;
        std::vector<std::string> words;
        for (const auto& t : r.tags) words.push_back(t.label);
        std::vector<pipeline::XmpFaceRegion> faces;
        for (const auto& f : r.faces) faces.push_back({f.box, f.person_name});
        pipeline::write_xmp_sidecar(r.path, words, r.model_id, faces, r.width, r.height);
      }
    };
    const auto sink = [&](std::vector<pipeline::TagRecord>& group) {
      // Sidecars before the commit: a file the catalog calls done has its
      // sidecar, so a run stopped at one (disk full, a read-only folder, a
      // kill) leaves its batch to the re-run instead of skipping it there.
      if (catalog) catalog->write_and_assign(group, sidecars);
      else if (sidecars) sidecars(group);
      if (print) {
        for (const auto& r : group) print_record(r, o.json);
        std::fflush(stdout);
      }
      if (!catalog && (!o.jsonl.empty() || !o.csv.empty())) kept.insert(kept.end(), group.begin(), group.end());
    };
    if (o.queue) stats = run_queue_worker(o, *catalog, *model, in, *runs.front().tagger, sink, to.batch);
    else stats = run_on_devices(runs, in.files, sink, to.batch);
  }
  if (catalog) {
    TANDEM_ZONE_CAT("catalog statistics", "tag");
    catalog->refresh_statistics();
    catalog->checkpoint();
  }
  if (!o.jsonl.empty() || !o.csv.empty()) {
    if (catalog) kept = catalog->records(model->id());
    else std::sort(kept.begin(), kept.end(), [](auto& a, auto& b) { return a.path < b.path; });
    if (!o.jsonl.empty()) pipeline::write_jsonl(o.jsonl, kept);
    if (!o.csv.empty()) pipeline::write_csv(o.csv, kept);
  }
  if (stats.gpu_decoders_unopened > 0)
    fmt::print(
        stderr,
        "tandem: {} of {} GPU JPEG decoders did not open, the CPU decoders took their files: {}\n",
        stats.gpu_decoders_unopened, stats.gpu_decoders, stats.gpu_open_error);
  if (stats.gpu_decoders_out_of_memory > 0)
    fmt::print(stderr, "tandem: {} of {} GPU JPEG decoders ran out of GPU memory, the CPU decoders took their files: {}\n",
               stats.gpu_decoders_out_of_memory, stats.gpu_decoders, stats.gpu_memory_error);
  if (!o.decode_only && model->session()) say_fallback_cost(*model->session(), stats.wall_s);
  pipeline::diagnose(stats, facts);
  fmt::print(stderr, "{}", pipeline::format_summary(stats, in.skipped, in.ignored, in.unreadable));
  if (thumbnails && thumbnails->using_fallback())
    fmt::print(stderr, "tandem: {} could not be written: thumbnails went to {}.thumbnails\n",
               pipeline::default_thumbnail_root(), o.catalog);
  // Written here, not by the destructor, so that a profile that cannot be
  // written fails the run like any other output.
  trace.finish();
  // A thumbnail that could not be written, or a photo that could not be
  // read, is an output missing, as a photo that failed is: the exit status
  // says so.
  return stats.failed || stats.thumbnails_failed || in.unreadable ? 1 : 0;
}

}  // namespace

void add_tag_command(CLI::App& app) {
  auto o = std::make_shared<TagOptions>();
  CLI::App* sub = app.add_subcommand("tag", "Tag every photo under files and folders (decoding on all cores)");
  sub->add_option("paths", o->paths, "Photos and folders (searched recursively)")->required();
  sub->add_option("--model,-m", o->model,
                  fmt::format("An installed model's name, a TF.js detector or an ImageNet .onnx classifier "
                              "(default: {})",
                              pipeline::kDefaultModel));
  sub->add_option("--decoders", o->decoders, "Decoder threads (default: every core)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--batch", o->batch, "Images per network run (default: 128 on a GPU, 4 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--top", o->top, "At most this many tags per photo")->check(CLI::PositiveNumber);
  sub->add_option("--min-score", o->min_score, "Drop tags scoring below (default 0.25 detector, 0.05 classifier)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_flag(
      "--json", o->json,
      "One JSON object per photo and line on stdout: path, ok, width, height, objects (label, "
      "score, box; a detector's), tags");
  sub->add_option("--catalog", o->catalog,
                  "Catalog of results: a SQLite FILE or a postgresql:// URL (survives crashes; a re-run skips files "
                  "already tagged)");
  sub->add_flag("--queue", o->queue,
                "Share the run with other tag processes (any machines, any order) through the catalog's work queue: "
                "each lists the roots, claims files in batches under a renewed lease, and takes over a dead "
                "worker's files when its lease runs out");
  sub->add_option("--lease", o->lease, "--queue: seconds a claim lasts without renewal (renewed every third)")
      ->check(CLI::Range(1.0, 86400.0));
  sub->add_option("--claim", o->claim,
                  "--queue: files per claim (default: 2 batches; the next is claimed while a batch is left)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--db-retry", o->db_retry,
                  "Seconds a postgresql:// catalog may be unreachable mid-run (the run reconnects with growing "
                  "pauses, then stops; a batch is stored whole or not at all)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--jsonl", o->jsonl, "Also write the results as JSON lines to FILE");
  sub->add_option("--csv", o->csv, "Also write the results as CSV to FILE");
  sub->add_flag("--xmp", o->xmp, "Write tags as keywords into XMP sidecars (IMG.jpg.xmp; photos are never touched)");
  sub->add_flag("--force", o->force, "Tag again files the catalog already has");
  sub->add_flag(
      "--print", o->print,
      "Print each photo's tags on stdout also when they go to --catalog, --jsonl or --csv");
  sub->add_option(
         "--nvjpeg", o->nvjpeg,
         "Decode baseline JPEGs on the GPU's JPEG engines too: auto (when inference runs on a GPU "
         "with them), on (they must open, and the CPU decoders start on the files once they "
         "have), off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub->add_option("--gpu-decoders", o->gpu_decoders, "GPU JPEG decoder threads (each its own nvJPEG state and stream)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option(
         "--gpu-keep", o->gpu_keep_mb,
         "GPU memory (MB) holding the photos the GPU decoded until their faces are cut from them "
         "(0: none, the faces' regions are decoded again on the CPU; default: half the GPU's "
         "memory, at most 32 GiB)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--decode-only", o->decode_only,
                "Read, decode and fill batches, run no network and store nothing: the decoders' ceiling");
  sub->add_option("--faces", o->faces,
                  "Find faces and group them into people (`tandem people`): auto (when the face models are "
                  "installed and the model is the detector), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub->add_option("--thumbnails", o->thumbnails,
                  "Thumbnails of every photo (freedesktop layout in $XDG_CACHE_HOME/thumbnails, which file managers "
                  "share; beside the catalog when that is not writable): auto (on with --catalog), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub->add_option(
         "--face-batches", o->face_batches,
         "Batches whose faces are found at once, each on a thread of its own (default: 4 on a GPU, "
         "1 on the CPU): a batch's faces wait for its slowest region decode")
      ->check(CLI::PositiveNumber);
  sub->add_option("--face-threads", o->face_threads,
                  "Threads of their own decoding face regions for recognition (0 = none: the decoder threads "
                  "take those decodes before their next file)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag(
      "--exact-progressive", o->exact_progressive,
      "Decode every scan of progressive JPEGs. By default the detector's input and the face "
      "regions skip luma's refinement scans: 2-3x faster on such files, detections as close as "
      "CPU and GPU decodes are to each other, face descriptors closer than a JPEG re-encode "
      "leaves them (docs/BENCHMARKS.md)");
  // Photos want labels fast: fp16 on a GPU unless asked otherwise (the
  // shipped models agree with TF.js within fp16 tolerance; tests/tfjs).
  o->common.precision = "auto";
  add_common_options(sub, o->common);
  on_run(sub, [o] { return tag_command(*o); });
}

}  // namespace tandem::cli
