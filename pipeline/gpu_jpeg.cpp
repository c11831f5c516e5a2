#include "pipeline/gpu_jpeg.h"

#include <algorithm>

#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#include "cuda/nvjpeg/jpeg_batch_decoder.h"
#endif

namespace tandem::pipeline {

#ifdef TANDEM_HAVE_CUDA
namespace {

bool supported_config(const image::PreprocessConfig& config, std::string* why_not) {
  if (config.filter == image::ResampleFilter::bilinear) return true;
  if (why_not) *why_not = "the GPU decoder resizes with the bilinear filter only";
  return false;
}

class NvjpegDecoder final : public GpuJpegDecoder {
 public:
  explicit NvjpegDecoder(std::unique_ptr<cuda::JpegBatchDecoder> d) : d_(std::move(d)) {}
  NvjpegDecoder(int device, const cuda::GpuPreprocessParams& p) : device_(device), params_(p) {}

  bool open(std::string* why_not) override {
    if (!d_) d_ = cuda::JpegBatchDecoder::create(device_, params_, why_not);
    if (d_ && keep_) d_->keep_decoded(keep_);
    return d_ != nullptr;
  }

  bool supports(std::span<const uint8_t> jpeg) override { return d_->hardware_supports(jpeg); }

  std::vector<Result> decode(const std::vector<Job>& jobs) override {
    std::vector<cuda::DecodeJob> in;
    in.reserve(jobs.size());
    for (const Job& j : jobs)
      in.push_back({j.jpeg, j.orientation, j.out, j.thumbnail, j.thumbnail_side, j.keep});
    std::vector<Result> out;
    for (cuda::DecodeResult& r : d_->decode(in))
      out.push_back({r.ok, std::move(r.error), r.full_width, r.full_height, r.thumbnail_width,
                     r.thumbnail_height, r.kept});
    return out;
  }

  void keep_decoded(size_t bytes) override { keep_ = bytes; }

  bool read_kept(uint64_t ticket, const image::PixelRect& upright, int shrink, image::Image& out,
                 image::PixelRect* clipped) override {
    if (!d_) return false;
    cuda::KeptImages::Rect got;
    const auto rows = [&](int width, int height) {
      out.reshape(width, height, 3);
      return out.data();
    };
    if (!d_->read_kept(ticket, {upright.x, upright.y, upright.width, upright.height}, shrink, rows,
                       &got))
      return false;
    if (clipped) *clipped = {got.x, got.y, got.width, got.height};
    return true;
  }

 private:
  int device_ = 0;
  cuda::GpuPreprocessParams params_;
  std::unique_ptr<cuda::JpegBatchDecoder> d_;  // null until open()
  size_t keep_ = 0;                            // keep_decoded()'s bytes
};

}  // namespace

cuda::GpuPreprocessParams gpu_preprocess_params(const image::PreprocessConfig& config) {
  cuda::GpuPreprocessParams p;
  p.mode = config.mode == image::ResizeMode::stretch ? cuda::GpuResizeMode::stretch
                                                     : cuda::GpuResizeMode::shorter_side;
  p.resize = config.resize, p.crop = config.crop;
  p.width = config.width, p.height = config.height;
  p.layout = config.layout == image::PixelLayout::interleaved ? cuda::GpuPixelLayout::interleaved
                                                              : cuda::GpuPixelLayout::planes;
  p.normalize = config.normalize;
  for (int c = 0; c < 3; ++c) p.mean[c] = config.mean[size_t(c)], p.std[c] = config.std[size_t(c)];
  return p;
}

size_t default_kept_bytes(int device, int decoders) {
  if (decoders <= 0 || device < 0 || device >= cuda::device_count()) return 0;
  // The photos between their decode and the face stage (five batches of
  // 128 waiting, two with the face threads, two queued for them; about 750
  // the GPU decoded, 27 GB at 12 MP) must fit, else their faces are decoded
  // again: with 16 GiB on an H100 half of them were. A GPU that shares the
  // system's memory (Jetson) gives less.
  const cudaDeviceProp& props = cuda::context(device).props;
  const size_t total = props.totalGlobalMem;
  const size_t share = props.integrated ? total / 8 : std::min(total / 2, size_t(32) << 30);
  return share / size_t(decoders);
}

std::unique_ptr<GpuJpegDecoder> open_gpu_jpeg_decoder(int device, const image::PreprocessConfig& config,
                                                      std::string* why_not) {
  if (!supported_config(config, why_not)) return nullptr;
  auto d = cuda::JpegBatchDecoder::create(device, gpu_preprocess_params(config), why_not);
  if (!d) return nullptr;
  return std::make_unique<NvjpegDecoder>(std::move(d));
}

std::unique_ptr<GpuJpegDecoder> gpu_jpeg_decoder_opened_later(int device,
                                                              const image::PreprocessConfig& config,
                                                              std::string* why_not) {
  if (!supported_config(config, why_not)) return nullptr;
  return std::make_unique<NvjpegDecoder>(device, gpu_preprocess_params(config));
}

#else

size_t default_kept_bytes(int, int) { return 0; }

std::unique_ptr<GpuJpegDecoder> open_gpu_jpeg_decoder(int, const image::PreprocessConfig&, std::string* why_not) {
  if (why_not) *why_not = "tandem was built without CUDA";
  return nullptr;
}

std::unique_ptr<GpuJpegDecoder> gpu_jpeg_decoder_opened_later(int device,
                                                              const image::PreprocessConfig& config,
                                                              std::string* why_not) {
  return open_gpu_jpeg_decoder(device, config, why_not);
}

#endif

}  // namespace tandem::pipeline
