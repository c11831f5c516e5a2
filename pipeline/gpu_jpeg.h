#pragma once
// The GPU's JPEG decoder as the tagger sees it: groups of JPEG files in,
// network inputs out, as an image::Preprocessor with the same config makes
// them (a classifier's cropped, normalized planes; a detector's stretched,
// raw RGB pixels). In CUDA builds this is nvJPEG on the hardware JPEG
// engines (cuda/nvjpeg), loaded at run time; elsewhere, or without
// libnvjpeg or engines, there is none.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "image/image.h"
#include "image/preprocess.h"
#include "image/region_decode.h"

namespace tandem::cuda {
struct GpuPreprocessParams;  // cuda/jpeg_preprocess.h
}

namespace tandem::pipeline {

class GpuJpegDecoder {
 public:
  struct Job {
    std::span<const uint8_t> jpeg;
    int orientation = 1;  // EXIF 1..8
    float* out = nullptr;  // a batch slot: the config's 3 x output width x height floats
    // Optional: the upright photo fitted into thumbnail_side pixels, raw
    // 0..255 RGB interleaved (room for thumbnail_side^2 * 3 floats), made
    // from the same decode.
    float* thumbnail = nullptr;
    int thumbnail_side = 0;
    bool keep = false;  // keep the decoded photo for read_kept() (keep_decoded() on)
  };
  struct Result {
    bool ok = false;
    std::string error;
    int width = 0, height = 0;  // upright, full size
    int thumbnail_width = 0, thumbnail_height = 0;  // 0: no thumbnail was made
    uint64_t kept = 0;  // read_kept()'s ticket; 0: the photo was not kept
  };
  virtual ~GpuJpegDecoder() = default;
  // Readies the decoder on the thread that uses it, before any other call;
  // false, with the reason, when it cannot (it is then not used). Opening
  // nvJPEG takes ~0.4 s a decoder: on its own thread, the CPU decoders and
  // the model's preparation go on meanwhile.
  virtual bool open(std::string* why_not) {
    (void)why_not;
    return true;
  }
  // Whether the engines take this file (baseline JPEG); never throws.
  virtual bool supports(std::span<const uint8_t> jpeg) = 0;
  // Decodes the jobs as one group; a bad file fails alone. Throws only when
  // the GPU itself fails.
  virtual std::vector<Result> decode(const std::vector<Job>& jobs) = 0;

  // Keeps the full-resolution pixels of the photos whose jobs ask for it in
  // up to `bytes` of GPU memory, newest first, so that a face found later is
  // cut from them instead of decoded again on the CPU. Before open().
  virtual void keep_decoded(size_t bytes) { (void)bytes; }
  // The upright rectangle `upright` (full-resolution pixels, clipped to the
  // photo) of kept photo `ticket` as RGB in `out`, `*clipped` the part read;
  // with `shrink` 2, 4 or 8, its blocks of shrink x shrink averaged on the
  // GPU (cuda::KeptImages::read). False when the photo is no longer kept or
  // the rectangle misses it. Callable from any thread, also while decode()
  // runs on its own.
  virtual bool read_kept(uint64_t ticket, const image::PixelRect& upright, int shrink,
                         image::Image& out, image::PixelRect* clipped) {
    (void)ticket, (void)upright, (void)shrink, (void)out, (void)clipped;
    return false;
  }
};

// GPU memory to keep decoded photos in, per decoder, when `decoders` share
// GPU `device`: half its memory, at most 32 GiB (an eighth where the GPU
// shares the system's memory), split between them
// (0 without CUDA or a GPU).
size_t default_kept_bytes(int device, int decoders);

// A decoder on GPU `device` producing `config`'s network input, or null with
// the reason (no CUDA build, no GPU, no libnvjpeg, no hardware engines).
// Each decoder is used by one thread.
std::unique_ptr<GpuJpegDecoder> open_gpu_jpeg_decoder(int device, const image::PreprocessConfig& config,
                                                      std::string* why_not);

// The same decoder, opened by its open() on the thread that uses it; null,
// with the reason, only when `config` is one no GPU decoder produces.
std::unique_ptr<GpuJpegDecoder> gpu_jpeg_decoder_opened_later(int device,
                                                              const image::PreprocessConfig& config,
                                                              std::string* why_not);

#ifdef TANDEM_HAVE_CUDA
// `config` in the cuda layer's words (it cannot include image/): what the
// decoders above are opened with.
cuda::GpuPreprocessParams gpu_preprocess_params(const image::PreprocessConfig& config);
#endif

}  // namespace tandem::pipeline
