#include "cuda/nvjpeg/jpeg_batch_decoder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda/check.h"
#include "cuda/context.h"
#include "profile/zone.h"

namespace tandem::cuda {

using namespace nvjpeg;

namespace {

// TANDEM_THUMBS_PAGEABLE=1: the copy per photo into the caller's pageable
// buffer that the pinned staging replaced, kept to compare the two on a GPU.
bool thumbs_pageable() {
  static const bool on = [] {
    const char* v = std::getenv("TANDEM_THUMBS_PAGEABLE");
    return v && std::string(v) == "1";
  }();
  return on;
}

constexpr size_t kImageAlign = 256;     // each decoded image starts on a 256-byte boundary
constexpr size_t kMaxCachedPlans = 64;  // distinct (size, orientation) geometries kept

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Grows `b` to at least `bytes` (with headroom, so slowly growing sizes do
// not reallocate each call). Only called while nothing on the stream uses it.
void ensure_bytes(DeviceBuffer& b, size_t bytes, const char* what) {
  if (b.bytes() >= bytes) return;
  b = DeviceBuffer();  // free first: the old and new buffers need not coexist
  b = DeviceBuffer(bytes + bytes / 4, what, {});
}

const char* encoding_name(nvjpegJpegEncoding_t e) {
  switch (e) {
    case NVJPEG_ENCODING_BASELINE_DCT: return "baseline";
    case NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN: return "extended sequential";
    case NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN: return "progressive";
    default: return "unknown or lossless";
  }
}

}  // namespace

void fit_into(int width, int height, int side, int* out_width, int* out_height) {
  const double scale = std::min(1.0, double(side) / double(std::max(width, height)));
  *out_width = std::max(1, int(width * scale + 0.5));
  *out_height = std::max(1, int(height * scale + 0.5));
}

std::unique_ptr<JpegBatchDecoder> JpegBatchDecoder::create(int device, const GpuPreprocessParams& p,
                                                           std::string* why_not) {
  check_preprocess_params(p);
  auto unavailable = [&](const std::string& reason) {
    if (why_not) *why_not = reason;
    return std::unique_ptr<JpegBatchDecoder>();
  };
  const int n = device_count();
  if (device < 0 || device >= n)
    return unavailable("no CUDA GPU cuda:" + std::to_string(device) + " (" + std::to_string(n) + " found)");
  std::string reason;
  const NvjpegApi* api = load_nvjpeg(&reason);
  if (!api) return unavailable(reason);
  std::unique_ptr<JpegBatchDecoder> d(new JpegBatchDecoder(device, p, api));
  try {
    d->open();
  } catch (const Error& e) {
    // ARCH_MISMATCH (or JPEG_NOT_SUPPORTED) from nvjpegCreateEx: a GPU without JPEG engines.
    return unavailable(std::string("no hardware JPEG decoder on cuda:") + std::to_string(device) + ": " + e.what());
  }
  return d;
}

JpegBatchDecoder::JpegBatchDecoder(int device, const GpuPreprocessParams& p, const NvjpegApi* api)
    : device_(device), params_(p), api_(api) {}

void JpegBatchDecoder::open() {
  set_device(device_);
  // Chroma upsampled as libjpeg-turbo does (closer to the CPU path) where
  // the library knows the flag; plain otherwise.
  if (api_->CreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, kFlagsUpsamplingWithInterpolation, &handle_) !=
      NVJPEG_STATUS_SUCCESS) {
    handle_ = nullptr;
    check_nvjpeg(api_->CreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, kFlagsDefault, &handle_),
                 "nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE)");
  }
  check_nvjpeg(api_->JpegStateCreate(handle_, &state_), "nvjpegJpegStateCreate");
  check_nvjpeg(api_->JpegStreamCreate(handle_, &parser_), "nvjpegJpegStreamCreate");
  // TANDEM_JPEG_STREAM_PRIORITY=high: the resize kernels ahead of the
  // network's queued ones, for comparing on a GPU whether the engine threads
  // wait on them inside `tag` (docs/DEVELOPING.md).
  int priority = 0;
  if (const char* v = std::getenv("TANDEM_JPEG_STREAM_PRIORITY"); v && std::string(v) == "high") {
    int least = 0;
    check_cuda(cudaDeviceGetStreamPriorityRange(&least, &priority),
               "cudaDeviceGetStreamPriorityRange");
  }
  check_cuda(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority),
             "cudaStreamCreateWithPriority(JPEG decoder)");
}

JpegBatchDecoder::~JpegBatchDecoder() {
  // Statuses ignored: a destructor cannot report them, and each release is
  // independent of the others.
  cudaSetDevice(device_);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  if (parser_) api_->JpegStreamDestroy(parser_);
  if (state_) api_->JpegStateDestroy(state_);
  if (handle_) api_->Destroy(handle_);
  cudaGetLastError();  // leave no error of ours for the thread's next CUDA call
}

bool JpegBatchDecoder::inspect(std::span<const uint8_t> jpeg, Header& h, std::string& why_not) {
  if (jpeg.empty()) {
    why_not = "JPEG file is empty (0 bytes)";
    return false;
  }
  nvjpegStatus_t s = api_->JpegStreamParseHeader(handle_, jpeg.data(), jpeg.size(), parser_);
  if (s != NVJPEG_STATUS_SUCCESS) {
    why_not = "not a readable JPEG (nvjpegJpegStreamParseHeader: " + status_name(s) + ")";
    return false;
  }
  nvjpegJpegEncoding_t encoding = NVJPEG_ENCODING_UNKNOWN;
  s = api_->JpegStreamGetJpegEncoding(parser_, &encoding);
  if (s != NVJPEG_STATUS_SUCCESS) {
    why_not = "nvjpegJpegStreamGetJpegEncoding: " + status_name(s);
    return false;
  }
  if (encoding != NVJPEG_ENCODING_BASELINE_DCT && encoding != NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN) {
    why_not = std::string(encoding_name(encoding)) + " JPEG: the hardware decoder takes single-scan (baseline) files";
    return false;
  }
  unsigned width = 0, height = 0, components = 0;
  s = api_->JpegStreamGetFrameDimensions(parser_, &width, &height);
  if (s != NVJPEG_STATUS_SUCCESS || width == 0 || height == 0 || width > 65535 || height > 65535) {
    why_not = "JPEG header gives no usable size (nvjpegJpegStreamGetFrameDimensions: " + status_name(s) + ")";
    return false;
  }
  if (int64_t(width) * int64_t(height) > params_.max_pixels) {
    why_not = "JPEG of " + std::to_string(width) + "x" + std::to_string(height) + " is over the limit of " +
              std::to_string(params_.max_pixels) + " pixels";
    return false;
  }
  s = api_->JpegStreamGetComponentsNum(parser_, &components);
  if (s != NVJPEG_STATUS_SUCCESS || (components != 1 && components != 3)) {
    why_not = "JPEG with " + std::to_string(components) + " components (nvjpegJpegStreamGetComponentsNum: " +
              status_name(s) + "); the GPU path takes gray or YCbCr";
    return false;
  }
  int unsupported = -1;  // nvJPEG sets 0 when the batched hardware decoder can take the stream
  s = api_->DecodeBatchedSupported(handle_, parser_, &unsupported);
  if (s != NVJPEG_STATUS_SUCCESS || unsupported != 0) {
    why_not = "the hardware JPEG decoder cannot take this file (nvjpegDecodeBatchedSupported: " + status_name(s) +
              ", is_supported " + std::to_string(unsupported) + ")";
    return false;
  }
  h.width = int(width);
  h.height = int(height);
  h.gray = components == 1;
  return true;
}

bool JpegBatchDecoder::hardware_supports(std::span<const uint8_t> jpeg) {
  try {
    Header h;
    std::string why_not;
    return inspect(jpeg, h, why_not);
  } catch (...) {  // only std::bad_alloc can come from inspect; "no" is the safe answer
    return false;
  }
}

const DevicePreprocessPlan& JpegBatchDecoder::plan_for(int width, int height, int orientation) {
  const auto key = std::make_tuple(width, height, orientation);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  // Ordered before the kernels on the same stream; the source lives in the cache.
  DevicePreprocessPlan c =
      upload_preprocess_plan(plan_preprocess(width, height, orientation, params_), stream_);
  return plans_.emplace(key, std::move(c)).first->second;
}

void JpegBatchDecoder::plan_thumbnail(Slot& s, int orientation, int side, int upright_width, int upright_height) {
  GpuPreprocessParams& t = s.thumb_params;
  t.mode = GpuResizeMode::stretch;
  fit_into(upright_width, upright_height, side, &t.width, &t.height);
  t.layout = GpuPixelLayout::interleaved;
  t.normalize = false;
  t.max_pixels = params_.max_pixels;
  const auto key = std::make_tuple(s.header.width, s.header.height, orientation, side);
  auto it = thumb_plans_.find(key);
  if (it == thumb_plans_.end())
    it = thumb_plans_
             .emplace(key, upload_preprocess_plan(plan_preprocess(s.header.width, s.header.height, orientation, t),
                                                  stream_))
             .first;
  s.thumb_plan = &it->second;
}

void JpegBatchDecoder::reserve_buffers(std::vector<Slot>& slots) {
  size_t decoded_bytes = 0, temp_bytes = 0, thumb_floats = 0;
  if (kept_) kept_->begin_group();
  for (Slot& s : slots) {
    s.pitch = size_t(s.header.width) * 3;
    const size_t bytes = s.pitch * size_t(s.header.height);
    std::optional<uint8_t*> ring = s.keep && kept_ ? kept_->place(bytes) : std::nullopt;
    s.kept = ring.has_value();
    s.image = ring.value_or(nullptr);
    if (!s.kept) {
      s.offset = decoded_bytes;
      decoded_bytes += round_up(bytes, kImageAlign);
    }
    temp_bytes =
        std::max(temp_bytes, size_t(s.plan->plan.rows) * size_t(params_.output_width()) * 3);
    if (s.thumb_plan) {
      temp_bytes = std::max(temp_bytes, size_t(s.thumb_plan->plan.rows) * size_t(s.thumb_params.width) * 3);
      s.thumb_offset = thumb_floats;
      thumb_floats += s.thumb_params.output_floats();
    }
  }
  ensure_bytes(decoded_, decoded_bytes, "cudaMalloc(decoded JPEGs)");
  for (Slot& s : slots)
    if (!s.kept) s.image = static_cast<uint8_t*>(decoded_.get()) + s.offset;
  ensure_bytes(temp_, temp_bytes, "cudaMalloc(JPEG preprocess rows)");
  ensure_bytes(outputs_, slots.size() * output_size() * sizeof(float), "cudaMalloc(JPEG preprocess outputs)");
  if (thumb_floats) ensure_bytes(thumbs_, thumb_floats * sizeof(float), "cudaMalloc(JPEG thumbnails)");
  thumb_floats_ = thumb_floats;
}

bool JpegBatchDecoder::decode_batch(const std::vector<Slot*>& batch, std::string& error) {
  const int n = int(batch.size());
  if (initialized_batch_ != n) {
    const nvjpegStatus_t s = api_->DecodeBatchedInitialize(handle_, state_, n, 1, NVJPEG_OUTPUT_RGBI);
    if (s != NVJPEG_STATUS_SUCCESS) {
      initialized_batch_ = 0;
      error = "nvjpegDecodeBatchedInitialize: " + status_name(s);
      return false;
    }
    initialized_batch_ = n;
  }
  std::vector<const unsigned char*> data(batch.size());
  std::vector<size_t> lengths(batch.size());
  std::vector<nvjpegImage_t> images(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    const Slot& s = *batch[k];
    data[k] = s.jpeg.data();
    lengths[k] = s.jpeg.size();
    images[k] = nvjpegImage_t{};
    images[k].channel[0] = s.image;  // RGBI writes channel[0] only
    images[k].pitch[0] = s.pitch;
  }
  const nvjpegStatus_t s = api_->DecodeBatched(handle_, state_, data.data(), lengths.data(), images.data(), stream_);
  if (s != NVJPEG_STATUS_SUCCESS) {
    initialized_batch_ = 0;  // nvJPEG: re-initialise to reset a failed batch
    error = "nvjpegDecodeBatched: " + status_name(s);
    return false;
  }
  return true;
}

void JpegBatchDecoder::decode_slots(std::vector<Slot>& slots, std::vector<DecodeResult>& results) {
  std::vector<Slot*> batch;
  for (Slot& s : slots) batch.push_back(&s);
  std::string error;
  if (decode_batch(batch, error)) {
    for (Slot* s : batch) s->decoded = true;
    return;
  }
  if (batch.size() == 1) {
    results[batch[0]->job].error = error;
    return;
  }
  // The group failed as a whole: one at a time, so a bad file fails alone.
  for (Slot* s : batch) {
    std::string own;
    s->decoded = decode_batch({s}, own);
    if (!s->decoded) results[s->job].error = own;
  }
}

void JpegBatchDecoder::preprocess_slots(const std::vector<Slot>& slots,
                                        const std::vector<DecodeJob>& jobs) {
  auto* temp = static_cast<uint8_t*>(temp_.get());
  auto* outputs = static_cast<float*>(outputs_.get());
  const size_t floats = output_size();
  for (size_t k = 0; k < slots.size(); ++k) {
    const Slot& s = slots[k];
    if (!s.decoded) continue;
    const DecodeJob& job = jobs[s.job];
    const DevicePreprocessPlan& c = *s.plan;
    const StoredRgb img = stored_rgb(s.image, s.pitch, s.header.width, s.header.height,
                                     job.orientation, s.header.gray);
    float* out = outputs + k * floats;
    launch_preprocess(img, c.horizontal, c.vertical, c.plan.row0, c.plan.rows, temp, params_, out,
                      stream_);
    check_cuda(cudaMemcpyAsync(job.out, out, floats * sizeof(float), cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync(JPEG preprocess output)");
    if (!s.thumb_plan) continue;
    // The thumbnail from the same decoded pixels, while they are on the GPU.
    const DevicePreprocessPlan& t = *s.thumb_plan;
    float* thumb = static_cast<float*>(thumbs_.get()) + s.thumb_offset;
    launch_preprocess(img, t.horizontal, t.vertical, t.plan.row0, t.plan.rows, temp, s.thumb_params, thumb, stream_);
    if (thumbs_pageable())
      check_cuda(
          cudaMemcpyAsync(job.thumbnail, thumb, s.thumb_params.output_floats() * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync(JPEG thumbnail)");
  }
}

void JpegBatchDecoder::copy_thumbnails(const std::vector<Slot>& slots) {
  if (thumb_floats_ == 0 || thumbs_pageable()) return;
  const bool any = std::any_of(slots.begin(), slots.end(),
                               [](const Slot& s) { return s.decoded && s.thumb_plan; });
  if (!any) return;
  const size_t bytes = thumb_floats_ * sizeof(float);
  uint8_t* host = thumb_staging_.get(bytes, "cudaHostAlloc(JPEG thumbnails)");
  check_cuda(cudaMemcpyAsync(host, thumbs_.get(), bytes, cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync(JPEG thumbnails)");
}

void JpegBatchDecoder::hand_out_thumbnails(const std::vector<Slot>& slots,
                                           const std::vector<DecodeJob>& jobs) {
  if (thumbs_pageable()) return;
  const float* all = reinterpret_cast<const float*>(thumb_staging_.data());
  for (const Slot& s : slots)
    if (s.decoded && s.thumb_plan)
      std::memcpy(jobs[s.job].thumbnail, all + s.thumb_offset,
                  s.thumb_params.output_floats() * sizeof(float));
}

std::vector<DecodeResult> JpegBatchDecoder::decode(const std::vector<DecodeJob>& jobs) {
  set_device(device_);
  std::vector<DecodeResult> results(jobs.size());
  // Nothing is in flight between calls (each ends with a sync), so cached
  // weights may be dropped here.
  if (plans_.size() > kMaxCachedPlans) plans_.clear();
  if (thumb_plans_.size() > kMaxCachedPlans) thumb_plans_.clear();
  std::vector<Slot> slots;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const DecodeJob& job = jobs[i];
    DecodeResult& r = results[i];
    if (!job.out) {
      r.error = "no output buffer";
      continue;
    }
    if (job.orientation < 1 || job.orientation > 8) {
      r.error = "EXIF orientation " + std::to_string(job.orientation) + " is not one of 1..8";
      continue;
    }
    Slot s;
    s.job = i;
    s.jpeg = job.jpeg;
    s.keep = job.keep;
    if (!inspect(job.jpeg, s.header, r.error)) continue;
    try {
      s.plan = &plan_for(s.header.width, s.header.height, job.orientation);
    } catch (const Error& e) {  // e.g. a resized side too large
      r.error = e.what();
      continue;
    }
    r.full_width = s.plan->plan.upright_width;
    r.full_height = s.plan->plan.upright_height;
    if (job.thumbnail && job.thumbnail_side > 0) {
      try {
        plan_thumbnail(s, job.orientation, job.thumbnail_side, r.full_width, r.full_height);
      } catch (const Error&) {
        s.thumb_plan = nullptr;  // no thumbnail; the photo is still tagged
      }
    }
    slots.push_back(s);
  }
  if (!slots.empty()) {
    reserve_buffers(slots);
    decode_slots(slots, results);
    preprocess_slots(slots, jobs);
    copy_thumbnails(slots);
    {
      TANDEM_ZONE_CAT("JPEG decoder synchronize", "wait.gpu");
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(JPEG decoder)");
    }
    hand_out_thumbnails(slots, jobs);
    for (const Slot& s : slots) {
      DecodeResult& r = results[s.job];
      r.ok = s.decoded;
      if (s.decoded && s.thumb_plan) r.thumbnail_width = s.thumb_params.width, r.thumbnail_height = s.thumb_params.height;
      if (s.decoded && s.kept)
        r.kept = kept_->add(s.image, s.pitch, s.header.width, s.header.height,
                            jobs[s.job].orientation, s.header.gray);
    }
  }
  return results;
}

void JpegBatchDecoder::keep_decoded(size_t capacity) {
  kept_ = capacity > 0 ? std::make_unique<KeptImages>(device_, capacity) : nullptr;
}

bool JpegBatchDecoder::read_kept(uint64_t ticket, KeptImages::Rect upright,
                                 std::vector<uint8_t>& out, KeptImages::Rect* clipped, int shrink) {
  return kept_ && kept_->read(ticket, upright, out, clipped, shrink);
}

bool JpegBatchDecoder::read_kept(uint64_t ticket, KeptImages::Rect upright, int shrink,
                                 const KeptImages::Rows& rows, KeptImages::Rect* clipped) {
  return kept_ && kept_->read(ticket, upright, shrink, rows, clipped);
}

}  // namespace tandem::cuda
