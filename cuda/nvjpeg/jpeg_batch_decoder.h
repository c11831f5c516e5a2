#pragma once
// Decodes groups of JPEGs on the GPU's hardware JPEG engines (nvJPEG's
// batched API with NVJPEG_BACKEND_HARDWARE) and turns each into a network
// input (cuda/jpeg_preprocess.h) written to a host buffer: the GPU
// counterpart of image::decode_image + image::Preprocessor for the JPEGs the
// engines take (baseline, single scan; not progressive).
//
// Images are decoded at full size. nvJPEG's hardware downscale
// (nvjpegDecodeParamsSetScaleFactor, "works only with the hardware decoder
// backend" in nvjpeg.h 12.x) reaches the batched path only through
// nvjpegDecodeBatchedEx with per-image decode params, and its output would
// not be the full-size pixels the CPU reference resizes; it is left out.
//
// Thread-safety: none. One decoder belongs to one thread (it owns an nvJPEG
// handle, decode state, stream and buffers); make one per decoding thread.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/jpeg_preprocess.h"
#include "cuda/nvjpeg/kept_images.h"
#include "cuda/nvjpeg/nvjpeg_api.h"
#include "cuda/nvjpeg/resample_plan.h"
#include "cuda/pinned_staging.h"

namespace tandem::cuda {

struct DecodeJob {
  std::span<const uint8_t> jpeg;  // must stay valid until decode() returns
  int orientation = 1;            // EXIF 1..8, read by the caller
  float* out = nullptr;           // host (ideally pinned): params().output_floats() floats
  // Optional: the upright image fitted into thumbnail_side x thumbnail_side
  // (never enlarged; the same antialiased bilinear filter), raw 0..255 RGB
  // interleaved, for a thumbnail without a second decode. Host, room for
  // thumbnail_side^2 * 3 floats.
  float* thumbnail = nullptr;
  int thumbnail_side = 0;
  // Keep the decoded photo on the GPU for read_kept() (keep_decoded() on).
  bool keep = false;
};

struct DecodeResult {
  bool ok = false;
  std::string error;                   // why not, when !ok
  int full_width = 0, full_height = 0;  // upright size at full resolution (after orientation)
  int thumbnail_width = 0, thumbnail_height = 0;  // what was written to the job's thumbnail
  uint64_t kept = 0;  // read_kept()'s ticket for the decoded photo; 0: not kept
};

// The upright width x height fitted into side x side, never enlarged, as
// pipeline/thumbnails.cpp rounds it.
void fit_into(int width, int height, int side, int* out_width, int* out_height);

class JpegBatchDecoder {
 public:
  // A decoder on GPU `device`, or null with the reason in *why_not when
  // there is no such GPU, no libnvjpeg, or no hardware JPEG engine (nvJPEG
  // refuses the hardware backend). Never throws for "not available";
  // throws tandem::Error only for invalid params.
  static std::unique_ptr<JpegBatchDecoder> create(int device, const GpuPreprocessParams& p,
                                                  std::string* why_not = nullptr);
  ~JpegBatchDecoder();
  JpegBatchDecoder(const JpegBatchDecoder&) = delete;
  JpegBatchDecoder& operator=(const JpegBatchDecoder&) = delete;

  const GpuPreprocessParams& params() const { return params_; }
  // Floats decode() writes to each job's out.
  size_t output_size() const { return params_.output_floats(); }

  // Whether the hardware engines can decode these bytes (a baseline JPEG,
  // 1 or 3 components, within max_pixels). False, never an exception, for
  // progressive files and for bytes that are not a JPEG at all.
  bool hardware_supports(std::span<const uint8_t> jpeg);

  // Decodes the jobs as one batch (a file the batch cannot take fails alone,
  // see DecodeResult) and writes each good one's floats to its out. Returns
  // when all output is written. Throws tandem::Error only when the GPU
  // itself fails (a CUDA error), not for a bad file.
  std::vector<DecodeResult> decode(const std::vector<DecodeJob>& jobs);

  // Keeps the decoded photos of the jobs that ask for it in `capacity` bytes
  // of device memory (cuda/nvjpeg/kept_images.h), the oldest evicted first.
  // Before the first decode().
  void keep_decoded(size_t capacity);
  // The upright rectangle of a kept photo at full resolution, as
  // KeptImages::read gives it; false when it is no longer kept. Unlike the
  // rest of the decoder, callable from any thread, also while decode() runs.
  bool read_kept(uint64_t ticket, KeptImages::Rect upright, std::vector<uint8_t>& out,
                 KeptImages::Rect* clipped, int shrink = 1);
  bool read_kept(uint64_t ticket, KeptImages::Rect upright, int shrink,
                 const KeptImages::Rows& rows, KeptImages::Rect* clipped);

 private:
  // What the header says, for a file the engines can take.
  struct Header {
    int width = 0, height = 0;  // as stored
    bool gray = false;
  };
  // One job the header check let through.
  struct Slot {
    size_t job = 0;
    std::span<const uint8_t> jpeg;
    Header header;
    bool keep = false;             // the job asks for the photo to be kept
    uint8_t* image = nullptr;      // its RGB image: in decoded_, or in kept_'s ring
    bool kept = false;             // image is in kept_'s ring
    size_t offset = 0, pitch = 0;  // offset: the image's place in decoded_ when not kept
    const DevicePreprocessPlan* plan = nullptr;
    // The thumbnail's, when the job asks for one.
    GpuPreprocessParams thumb_params;
    const DevicePreprocessPlan* thumb_plan = nullptr;
    size_t thumb_offset = 0;  // its floats in thumbs_
    bool decoded = false;
  };

  JpegBatchDecoder(int device, const GpuPreprocessParams& p, const nvjpeg::NvjpegApi* api);
  void open();  // creates the handle, state, stream and parser; throws
  // Parses the header; false (with the reason) when the engines cannot take it.
  bool inspect(std::span<const uint8_t> jpeg, Header& h, std::string& why_not);
  const DevicePreprocessPlan& plan_for(int width, int height, int orientation);
  // Sets the slot's thumbnail params and plan for a side x side fit.
  void plan_thumbnail(Slot& s, int orientation, int side, int upright_width, int upright_height);
  void reserve_buffers(std::vector<Slot>& slots);
  void decode_slots(std::vector<Slot>& slots, std::vector<DecodeResult>& results);
  bool decode_batch(const std::vector<Slot*>& batch, std::string& error);
  void preprocess_slots(const std::vector<Slot>& slots, const std::vector<DecodeJob>& jobs);
  // Queues the copy of the batch's thumbnails into thumb_staging_; from
  // there to the jobs once the stream is synchronized (hand_out_thumbnails).
  void copy_thumbnails(const std::vector<Slot>& slots);
  void hand_out_thumbnails(const std::vector<Slot>& slots, const std::vector<DecodeJob>& jobs);

  int device_;
  GpuPreprocessParams params_;
  const nvjpeg::NvjpegApi* api_;
  nvjpeg::nvjpegHandle_t handle_ = nullptr;
  nvjpeg::nvjpegJpegState_t state_ = nullptr;
  nvjpeg::nvjpegJpegStream_t parser_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int initialized_batch_ = 0;  // batch size nvjpegDecodeBatchedInitialize was last called with; 0: none

  DeviceBuffer decoded_;  // the batch's RGB images, each 256-byte aligned
  DeviceBuffer temp_;     // one image's horizontal pass (images run in stream order)
  DeviceBuffer outputs_;  // the batch's float planes, copied to the jobs' out
  DeviceBuffer thumbs_;   // the batch's thumbnails, copied to the jobs' thumbnail
  size_t thumb_floats_ = 0;      // the batch's thumbnails' floats in thumbs_
  PinnedStaging thumb_staging_;  // thumbs_ on the host, before each goes to its job
  // By (stored width, height, orientation).
  std::map<std::tuple<int, int, int>, DevicePreprocessPlan> plans_;
  // By (stored width, height, orientation, side).
  std::map<std::tuple<int, int, int, int>, DevicePreprocessPlan> thumb_plans_;
  std::unique_ptr<KeptImages> kept_;  // null: nothing is kept
};

}  // namespace tandem::cuda
