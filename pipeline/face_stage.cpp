#include "pipeline/face_stage.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "core/error.h"
#include "image/decode.h"
#include "image/resize.h"
#include "pipeline/face_crop.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct FaceRef {
  size_t photo, face;
};

// Runs body(k) for k in [0, n) on up to `threads` threads.
template <typename Body>
void parallel_for(size_t n, int threads, Body body) {
  const size_t workers = std::min(n, size_t(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t k = 0; k < n; ++k) body(k);
    return;
  }
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t k = w; k < n; k += workers) body(k);
    });
  for (std::thread& t : pool) t.join();
}

FaceRecord record_of(const Face& f, FaceTraits&& t) {
  FaceRecord r;
  r.score = f.score;
  r.box = f.box;
  for (size_t k = 0; k < r.landmarks.size(); ++k) r.landmarks[k] = {f.landmarks[k].x, f.landmarks[k].y};
  r.descriptor = std::move(t.descriptor);
  r.age = t.age;
  r.gender_score = t.gender_score;
  return r;
}

}  // namespace

ParallelFor own_threads(int threads) {
  return [threads](size_t n, const std::function<void(size_t)>& body) { parallel_for(n, threads, body); };
}

std::vector<Face> faces_on_people(std::vector<Face> faces,
                                  const std::vector<DetectedObject>& objects) {
  static const std::set<std::string> kAnimals = {"bird", "cat",   "dog",  "horse", "sheep",
                                                 "cow",  "elephant", "bear", "zebra", "giraffe"};
  auto within = [](const Face& f, const DetectedObject& o) {
    const float cx = (f.box.x1 + f.box.x2) / 2, cy = (f.box.y1 + f.box.y2) / 2;
    return cx >= o.box.x1 && cx <= o.box.x2 && cy >= o.box.y1 && cy <= o.box.y2;
  };
  auto an_animals = [&](const Face& f) {
    bool animal = false;
    for (const DetectedObject& o : objects) {
      if (!within(f, o)) continue;
      if (o.label == "person") return false;
      animal = animal || kAnimals.count(o.label) > 0;
    }
    return animal;
  };
  faces.erase(std::remove_if(faces.begin(), faces.end(), an_animals), faces.end());
  return faces;
}

bool FaceStage::serves(const image::PreprocessConfig& input) {
  return input.mode == image::ResizeMode::stretch && !input.normalize && input.layout == image::PixelLayout::interleaved;
}

FaceStage::FaceStage(const FaceStageOptions& options, const image::PreprocessConfig& input)
    : options_(options), input_(input), detector_(options.detector), embedder_(options.embedder) {
  check(serves(input),
        "faces need the whole photo in the batch (the detector's input, the default model); this model crops or "
        "normalizes it: run without --faces, or with the default model");
  crop_threads_ = options.crop_threads > 0 ? options.crop_threads
                                           : std::max(1, int(std::thread::hardware_concurrency()) / 2);
}

void FaceStage::prepare(int n) {
  batch_ = n;
  const int s = detector_.input_size();
  detector_.prepare(Tensor::empty(DType::f32, {int64_t(n), s, s, 3}));
}

Tensor FaceStage::take_buffer(int count) {
  const int s = detector_.input_size();
  const int64_t n = std::max(count, batch_);
  Tensor t = detector_.input_buffer(n);
  // A partial batch's padding must be black, whatever an earlier one left there.
  const size_t per = size_t(s) * size_t(s) * 3;
  std::fill(t.data<float>() + size_t(count) * per, t.data<float>() + size_t(n) * per, 0.f);
  return t;
}

Tensor FaceStage::input(const Tensor& batch, int count) {
  TANDEM_ZONE_CAT("face detector input", "faces");
  const int s = detector_.input_size(), w = input_.width, h = input_.height;
  // A partial batch is padded to the prepared size: another size would
  // compile the network again.
  Tensor out = take_buffer(count);
  const image::PreprocessConfig c = detector_.input_config();
  const float* src = batch.data<float>();
  float* dst = out.data<float>();
  const size_t in_floats = size_t(w) * size_t(h) * 3, out_floats = size_t(s) * size_t(s) * 3;
  // On the inference thread's path: spread over the crop threads. The
  // detector's 512x512 halves exactly to BlazeFace's 256x256, a 2x2 mean
  // (on the H200 the general resampler here, one thread, took 25 of a 30 s
  // run of 3,500 photos).
  parallel_for(size_t(count), crop_threads_, [&](size_t i) {
    const float* in = src + i * in_floats;
    float* o = dst + i * out_floats;
    if (w == 2 * s && h == 2 * s) {
      for (int y = 0; y < s; ++y)
        for (int x = 0; x < s; ++x)
          for (int k = 0; k < 3; ++k) {
            const size_t a = (size_t(2 * y) * size_t(w) + size_t(2 * x)) * 3 + size_t(k), row = size_t(w) * 3;
            const float mean = (in[a] + in[a + 3] + in[a + row] + in[a + row + 3]) / 4.f;
            o[(size_t(y) * size_t(s) + size_t(x)) * 3 + size_t(k)] = (mean / 255.f - c.mean[size_t(k)]) / c.std[size_t(k)];
          }
      return;
    }
    image::Image photo(w, h, 3);
    for (size_t k = 0; k < photo.bytes(); ++k) photo.data()[k] = uint8_t(std::clamp(std::lround(in[k]), 0L, 255L));
    std::vector<uint8_t> small(out_floats);
    image::Resampler resampler;
    resampler.resize_window(photo, s, s, 0, 0, s, s, small.data());
    for (size_t k = 0; k < small.size(); ++k) o[k] = (float(small[k]) / 255.f - c.mean[k % 3]) / c.std[k % 3];
  });
  return out;
}

std::vector<std::vector<FaceRecord>> FaceStage::run(
    Tensor input, int count, const std::vector<std::pair<int, int>>& sizes,
    const std::vector<std::string>& photos, std::mutex& device, const ParallelFor* crops,
    const std::vector<HeldPixels>* kept, FaceStageStats* stats,
    const std::vector<std::vector<DetectedObject>>* objects) {
  std::vector<std::vector<FaceRecord>> out(static_cast<size_t>(count));
  if (count <= 0) return out;
  std::vector<std::pair<int, int>> all_sizes = sizes;
  all_sizes.resize(size_t(input.dim(0)), {1, 1});
  std::vector<std::vector<Face>> faces;
  {
    const Clock::time_point t0 = Clock::now();
    std::lock_guard<std::mutex> lock(device);
    const Clock::time_point t1 = Clock::now();
    TANDEM_ZONE_CAT("face detector", "faces");
    faces = detector_.detect(input, all_sizes);
    if (stats)
      stats->device_wait_s += seconds(t1 - t0), stats->networks_s += seconds(Clock::now() - t1);
  }
  detector_.recycle(std::move(input));
  faces.resize(size_t(count));
  for (size_t i = 0; i < faces.size(); ++i)
    if (photos[i].empty())
      faces[i].clear();
    else if (objects && i < objects->size())
      faces[i] = faces_on_people(std::move(faces[i]), (*objects)[i]);
  const PhotoBytes read = [&](size_t i, std::vector<uint8_t>& scratch) {
    image::read_file_into(scratch, photos[i], options_.decode.max_file_bytes);
    return std::span<const uint8_t>(scratch);
  };
  std::vector<std::vector<DescribedFace>> described =
      describe_faces(embedder_, faces, read, photos, options_.decode,
                     crops ? *crops : own_threads(crop_threads_), &device, kept, stats);
  for (size_t i = 0; i < faces.size(); ++i) {
    for (size_t k = 0; k < faces[i].size(); ++k)
      if (described[i][k].traits) out[i].push_back(record_of(faces[i][k], std::move(*described[i][k].traits)));
    if (stats && !described[i].empty()) {
      const bool all_kept = std::all_of(described[i].begin(), described[i].end(),
                                        [](const DescribedFace& d) { return d.from_kept; });
      const bool on_gpu = kept && i < kept->size() && (*kept)[i].on_gpu;
      ++(!all_kept ? stats->decoded : on_gpu ? stats->from_kept : stats->from_decode);
    }
  }
  return out;
}

std::vector<std::vector<DescribedFace>> describe_faces(
    FaceEmbedder& embedder, const std::vector<std::vector<Face>>& faces, const PhotoBytes& bytes,
    const std::vector<std::string>& names, const image::DecodeOptions& opt,
    const ParallelFor& parallel, std::mutex* device, const std::vector<HeldPixels>* kept,
    FaceStageStats* stats) {
  std::vector<std::vector<DescribedFace>> out;
  std::vector<FaceRef> refs;
  std::vector<size_t> first_ref;  // where each photo's faces start in refs
  for (size_t i = 0; i < faces.size(); ++i) {
    out.emplace_back(faces[i].size());
    if (!faces[i].empty()) first_ref.push_back(refs.size());
    for (size_t f = 0; f < faces[i].size(); ++f) refs.push_back({i, f});
  }
  if (refs.empty()) return out;
  first_ref.push_back(refs.size());
  const int side = embedder.input_size();
  const size_t per = size_t(side) * size_t(side) * 3;
  int64_t padded = 8;
  while (padded < int64_t(refs.size())) padded *= 2;
  Tensor crops = embedder.input_buffer(padded);
  // Every face's slot is written below; the padding's must be black.
  std::fill(crops.data<float>() + refs.size() * per, crops.data<float>() + size_t(padded) * per,
            0.f);
  const Clock::time_point crops_start = Clock::now();
  {
    TANDEM_ZONE_CAT("face crops", "faces");
    parallel(first_ref.size() - 1, [&](size_t p) {
      const size_t photo = refs[first_ref[p]].photo;
      std::vector<const Face*> group;
      std::vector<float*> slots;
      for (size_t k = first_ref[p]; k < first_ref[p + 1]; ++k) {
        group.push_back(&faces[photo][refs[k].face]);
        slots.push_back(crops.data<float>() + k * per);
      }
      try {
        FaceCropper cropper(side);
        // Face by face: kept pixels decoded DCT-scaled for the network serve
        // a large face but not a small one, which the region decode then
        // reads alone.
        const KeptPixels* held =
            kept && photo < kept->size() && (*kept)[photo] ? &(*kept)[photo].read : nullptr;
        std::vector<const Face*> rest;
        std::vector<float*> rest_slots;
        for (size_t g = 0; g < group.size(); ++g) {
          const bool from_kept =
              held && cropper.crop_kept(*held, std::span<const Face* const>(&group[g], 1),
                                        std::span<float* const>(&slots[g], 1));
          out[photo][refs[first_ref[p] + g].face].from_kept = from_kept;
          if (!from_kept) rest.push_back(group[g]), rest_slots.push_back(slots[g]);
        }
        if (!rest.empty()) {
          std::vector<uint8_t> scratch;
          cropper.crop(bytes(photo, scratch), rest, opt, names[photo], rest_slots);
        }
        for (size_t k = first_ref[p]; k < first_ref[p + 1]; ++k)
          out[photo][refs[k].face].traits.emplace();  // filled from FaceRes below
      } catch (const std::exception& e) {
        for (size_t k = first_ref[p]; k < first_ref[p + 1]; ++k) {
          out[photo][refs[k].face].error = e.what();
          std::fill(slots[k - first_ref[p]], slots[k - first_ref[p]] + per, 0.f);
        }
      }
    });
  }
  std::vector<FaceTraits> traits;
  {
    const Clock::time_point t0 = Clock::now();
    std::unique_lock<std::mutex> lock;
    if (device) lock = std::unique_lock<std::mutex>(*device);
    const Clock::time_point t1 = Clock::now();
    TANDEM_ZONE_CAT("face descriptors", "faces");
    traits = embedder.describe(crops);
    embedder.recycle(std::move(crops));
    if (stats) {
      stats->crops_s += seconds(t0 - crops_start);
      stats->device_wait_s += seconds(t1 - t0), stats->networks_s += seconds(Clock::now() - t1);
    }
  }
  for (size_t k = 0; k < refs.size(); ++k) {
    DescribedFace& d = out[refs[k].photo][refs[k].face];
    if (d.traits) d.traits = std::move(traits[k]);
  }
  return out;
}

}  // namespace tandem::pipeline
