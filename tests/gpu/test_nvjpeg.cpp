// The GPU JPEG path (cuda/nvjpeg/jpeg_batch_decoder.h: nvJPEG's hardware
// engines + cuda/jpeg_preprocess.cu) against the CPU path it stands in for:
// image::decode_image at full size (libjpeg-turbo, islow IDCT), oriented
// with image::orient_image, then image::Preprocessor (PIL-exact resize,
// window, float conversion; itself checked against torchvision and PIL),
// for the classifier's input (resize, center crop, normalized planes) and
// the detector's (the whole image stretched to 512x512, raw RGB NHWC).
//
// Two references:
//  * GpuPreprocess: the kernels alone, fed the very pixels the CPU
//    resizes (uploaded, not decoded on the GPU). The resampling and the
//    float conversion are the same integer and float32 arithmetic on both
//    sides: tolerance 0.
//  * GpuJpeg: through nvJPEG. Any difference comes from the JPEG decoders:
//    the engines' IDCT and chroma upsampling differ from libjpeg-turbo's by
//    a level or two per pixel (more on sharp chroma edges, which libjpeg's
//    "fancy" upsampling smooths); after the resize at most a few levels:
//    |diff| <= 0.1 after normalising (about 5.7 levels at std 0.225; 6
//    levels for raw values) and a mean |diff| <= 0.02 (about 1.1 levels;
//    1.2 raw). Measured on the H200 (nvJPEG of CUDA 13): at most 1 level,
//    upscaled images included, and a mean of 0.0002 levels or less.
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../image_test_util.h"
#include "cuda/jpeg_preprocess.h"
#include "cuda/nvjpeg/jpeg_batch_decoder.h"
#include "cuda/nvjpeg/resample_plan.h"
#include "gpu_test_util.h"
#include "image/decode.h"
#include "image/orientation.h"
#include "image/preprocess.h"
#include "pipeline/gpu_jpeg.h"

namespace tandem::testing {
namespace {

struct Tolerance {
  double max_abs, mean_abs;
};
constexpr Tolerance kNormalized{0.1, 0.02};  // classifier: (x / 255 - mean) / std
constexpr Tolerance kLevels{6.0, 1.2};       // detector: raw 0..255

// The classifier's input (torchvision's ImageNet recipe) and the detector's.
const image::PreprocessConfig kClassifier{};
const image::PreprocessConfig kDetector = image::stretch_config(512, 512);

#define TANDEM_REQUIRE_GPU_JPEG(decoder, config)                                                   \
  TANDEM_REQUIRE_GPU();                                                                            \
  std::string why_no_decoder;                                                                      \
  std::unique_ptr<cuda::JpegBatchDecoder> decoder =                                                \
      cuda::JpegBatchDecoder::create(0, pipeline::gpu_preprocess_params(config), &why_no_decoder); \
  if (!decoder) GTEST_SKIP() << "no GPU JPEG decoder: " << why_no_decoder

// A smooth synthetic photo: slow gradients (sky, skin) plus finer texture
// (foliage), different per channel.
std::vector<uint8_t> synthetic_rgb(int w, int h) {
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double r = 120 + 80 * std::sin(x * 0.011 + y * 0.004) + 25 * std::sin(x * 0.35) * std::sin(y * 0.27);
      const double g = 110 + 70 * std::cos(x * 0.007 - y * 0.013) + 20 * std::sin((x + y) * 0.21);
      const double b = 100 + 90 * std::sin(y * 0.009) + 15 * std::cos(x * 0.5);
      uint8_t* p = px.data() + (size_t(y) * size_t(w) + size_t(x)) * 3;
      p[0] = uint8_t(std::clamp(r, 0.0, 255.0));
      p[1] = uint8_t(std::clamp(g, 0.0, 255.0));
      p[2] = uint8_t(std::clamp(b, 0.0, 255.0));
    }
  }
  return px;
}

std::vector<uint8_t> gray_of(const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> g(rgb.size() / 3);
  for (size_t i = 0; i < g.size(); ++i) g[i] = uint8_t((rgb[3 * i] * 3 + rgb[3 * i + 1] * 5 + rgb[3 * i + 2] * 2) / 10);
  return g;
}

// libjpeg-turbo's compressor (TurboJPEG 2.1 API; Debian 12 has no tj3).
std::vector<uint8_t> encode(const std::vector<uint8_t>& px, int w, int h, int pixel_format, int subsamp, int flags) {
  tjhandle tj = tjInitCompress();
  EXPECT_NE(tj, nullptr);
  if (!tj) return {};
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, px.data(), w, 0, h, pixel_format, &buf, &size, subsamp, 90, flags);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(tj);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(buf, buf + size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

const int kW = 1000, kH = 750;

std::vector<uint8_t> color_jpeg(int subsamp, int flags = 0, int w = kW, int h = kH) {
  return encode(synthetic_rgb(w, h), w, h, TJPF_RGB, subsamp, flags);
}
std::vector<uint8_t> gray_jpeg(int w = kW, int h = kH) {
  return encode(gray_of(synthetic_rgb(w, h)), w, h, TJPF_GRAY, TJSAMP_GRAY, 0);
}

// The CPU path on `stored` pixels shown under `orientation`: upright, then
// preprocessed.
std::vector<float> cpu_preprocess(const image::Image& stored, int orientation,
                                  const image::PreprocessConfig& config) {
  image::Image upright;
  if (orientation == 1) {
    upright = stored;
  } else {
    image::orient_image(stored, orientation, upright);
  }
  image::Preprocessor pre(config);
  std::vector<float> out(pre.output_size());
  pre.run(upright, out);
  return out;
}

// The CPU path from the file: full-size decode, upright, preprocessed.
std::vector<float> cpu_reference(const std::vector<uint8_t>& jpeg, int orientation,
                                 const image::PreprocessConfig& config) {
  image::DecodeOptions opt;  // min_width = min_height = 0: no DCT scaling
  opt.apply_orientation = false;
  return cpu_preprocess(image::decode_image(jpeg, opt), orientation, config);
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu,
                  const std::string& what, Tolerance tol = kNormalized) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double max_abs = 0, sum = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double d = std::fabs(double(gpu[i]) - double(cpu[i]));
    ASSERT_FALSE(std::isnan(gpu[i])) << what << " at " << i;
    max_abs = std::max(max_abs, d);
    sum += d;
  }
  const double mean_abs = sum / double(cpu.size());
  EXPECT_LE(max_abs, tol.max_abs) << what;
  EXPECT_LE(mean_abs, tol.mean_abs) << what;
  std::printf("[ INFO     ] %s: max |diff| %.4f, mean |diff| %.5f\n", what.c_str(), max_abs, mean_abs);
}

struct Batch {
  std::vector<std::vector<float>> outputs;
  std::vector<cuda::DecodeJob> jobs;
  // keep: the decoder keeps the photo for read_kept().
  void add(const std::vector<uint8_t>& jpeg, int orientation, size_t floats, bool keep = false) {
    outputs.emplace_back(floats, -1000.f);
    jobs.push_back({jpeg, orientation, nullptr});
    jobs.back().keep = keep;
  }
  std::vector<cuda::DecodeResult> run(cuda::JpegBatchDecoder& d) {
    for (size_t i = 0; i < jobs.size(); ++i) jobs[i].out = outputs[i].data();
    return d.decode(jobs);
  }
};

TEST(GpuJpeg, Baseline420MatchesCpuPathInEveryOrientation) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_420);
  ASSERT_TRUE(d->hardware_supports(jpeg));
  const int orientations[] = {1, 3, 6, 8, 2, 4, 5, 7};
  Batch b;
  for (int o : orientations) b.add(jpeg, o, d->output_size());
  const std::vector<cuda::DecodeResult> r = b.run(*d);
  ASSERT_EQ(r.size(), b.jobs.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const int o = orientations[i];
    ASSERT_TRUE(r[i].ok) << "orientation " << o << ": " << r[i].error;
    const bool swap = image::orientation_swaps_axes(o);
    EXPECT_EQ(r[i].full_width, swap ? kH : kW);
    EXPECT_EQ(r[i].full_height, swap ? kW : kH);
    expect_close(b.outputs[i], cpu_reference(jpeg, o, kClassifier),
                 "4:2:0 orientation " + std::to_string(o));
  }
}

TEST(GpuJpeg, GrayReplicatesItsChannel) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> jpeg = gray_jpeg();
  if (!d->hardware_supports(jpeg)) GTEST_SKIP() << "the hardware decoder does not take grayscale JPEGs here";
  Batch b;
  b.add(jpeg, 1, d->output_size());
  b.add(jpeg, 6, d->output_size());
  const auto r = b.run(*d);
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].ok) << r[i].error;
    const int o = b.jobs[i].orientation;
    expect_close(b.outputs[i], cpu_reference(jpeg, o, kClassifier),
                 "gray orientation " + std::to_string(o));
  }
}

TEST(GpuJpeg, Baseline444MatchesCpuPath) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_444);
  if (!d->hardware_supports(jpeg)) GTEST_SKIP() << "the hardware decoder does not take 4:4:4 JPEGs here";
  Batch b;
  b.add(jpeg, 8, d->output_size());
  const auto r = b.run(*d);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  expect_close(b.outputs[0], cpu_reference(jpeg, 8, kClassifier), "4:4:4 orientation 8");
}

TEST(GpuJpeg, ProgressiveAndGarbageAreNotForTheHardware) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> progressive = color_jpeg(TJSAMP_420, TJFLAG_PROGRESSIVE);
  ASSERT_FALSE(progressive.empty());
  EXPECT_FALSE(d->hardware_supports(progressive));
  const std::vector<uint8_t> garbage = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x00, 0xff};
  EXPECT_FALSE(d->hardware_supports(garbage));
  EXPECT_FALSE(d->hardware_supports({}));
  const std::vector<uint8_t> soi_then_junk = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x02, 0x12, 0x34, 0xff, 0xd9};
  EXPECT_FALSE(d->hardware_supports(soi_then_junk));

  // decode() refuses them per file, with a reason, and still does the rest.
  const std::vector<uint8_t> good = color_jpeg(TJSAMP_420);
  Batch b;
  b.add(progressive, 1, d->output_size());
  b.add(garbage, 1, d->output_size());
  b.add(good, 1, d->output_size());
  const auto r = b.run(*d);
  EXPECT_FALSE(r[0].ok);
  EXPECT_NE(r[0].error.find("progressive"), std::string::npos) << r[0].error;
  EXPECT_FALSE(r[1].ok);
  EXPECT_FALSE(r[1].error.empty());
  ASSERT_TRUE(r[2].ok) << r[2].error;
  expect_close(b.outputs[2], cpu_reference(good, 1, kClassifier), "good file beside refused ones");
}

TEST(GpuJpeg, CorruptFileFailsAloneInABatch) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> good = color_jpeg(TJSAMP_420);
  std::vector<uint8_t> bad_header(good.begin(), good.begin() + 2);  // SOI, then junk instead of segments
  for (int i = 0; i < 200; ++i) bad_header.push_back(uint8_t(i * 37 + 11));
  // Cut inside the entropy-coded data: the header parses, the decode cannot
  // finish. Whether nvJPEG reports it or fills in the rest, the others must
  // come out right.
  const std::vector<uint8_t> truncated(good.begin(), good.begin() + std::ptrdiff_t(good.size() * 6 / 10));
  Batch b;
  b.add(good, 1, d->output_size());
  b.add(bad_header, 1, d->output_size());
  b.add(good, 6, d->output_size());
  b.add(truncated, 1, d->output_size());
  b.add(good, 3, d->output_size());
  const auto r = b.run(*d);
  EXPECT_FALSE(r[1].ok);
  EXPECT_FALSE(r[1].error.empty());
  std::printf("[ INFO     ] truncated file: %s\n", r[3].ok ? "decoded (nvJPEG filled it in)" : r[3].error.c_str());
  for (size_t i : {size_t(0), size_t(2), size_t(4)}) {
    ASSERT_TRUE(r[i].ok) << "job " << i << ": " << r[i].error;
    const int o = b.jobs[i].orientation;
    expect_close(b.outputs[i], cpu_reference(good, o, kClassifier),
                 "good file " + std::to_string(i) + " beside corrupt ones");
  }
}

// Calls of different batch sizes re-initialise the batched decoder and give
// the same floats for the same file; a decoder is reusable after a failure.
TEST(GpuJpeg, RepeatedCallsAreDeterministic) {
  TANDEM_REQUIRE_GPU_JPEG(d, kClassifier);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_420);
  Batch one;
  one.add(jpeg, 6, d->output_size());
  ASSERT_TRUE(one.run(*d)[0].ok);
  Batch three;
  const std::vector<uint8_t> garbage = {0xff, 0xd8, 0x00};
  three.add(garbage, 1, d->output_size());
  three.add(jpeg, 6, d->output_size());
  three.add(jpeg, 1, d->output_size());
  const auto r = three.run(*d);
  ASSERT_TRUE(r[1].ok) << r[1].error;
  ASSERT_TRUE(r[2].ok) << r[2].error;
  EXPECT_EQ(three.outputs[1], one.outputs[0]);
  Batch again;
  again.add(jpeg, 6, d->output_size());
  ASSERT_TRUE(again.run(*d)[0].ok);
  EXPECT_EQ(again.outputs[0], one.outputs[0]);
  // An empty call does nothing and fails nothing.
  EXPECT_TRUE(d->decode({}).empty());
}

// Photos kept on the GPU after their decode (cuda/nvjpeg/kept_images.h):
// an upright rectangle read back, in every orientation and across the
// photo's edges, is the CPU's full-size decode of that rectangle within the
// decoders' difference (kLevels, per pixel, before any resize), read whole
// and shrunk by 4 (block means, against the same means of the CPU's).
TEST(GpuJpeg, KeptPhotoRegionsAreTheCpuDecodeInEveryOrientation) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  d->keep_decoded(size_t(64) << 20);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_420);
  const int orientations[] = {1, 2, 3, 4, 5, 6, 7, 8};
  Batch b;
  for (int o : orientations) b.add(jpeg, o, d->output_size(), true);
  const std::vector<cuda::DecodeResult> r = b.run(*d);
  image::DecodeOptions full;
  full.apply_orientation = false;
  const image::Image stored = image::decode_image(jpeg, full);
  for (size_t i = 0; i < r.size(); ++i) {
    const int o = orientations[i];
    ASSERT_TRUE(r[i].ok) << r[i].error;
    ASSERT_NE(r[i].kept, 0u) << "orientation " << o;
    image::Image upright;
    image::orient_image(stored, o, upright);
    // Inside, over the right and bottom edges, over the top-left corner.
    const cuda::KeptImages::Rect rects[] = {{123, 77, 301, 190},
                                            {upright.width - 50, upright.height - 40, 120, 90},
                                            {-30, -20, 90, 60}};
    for (const cuda::KeptImages::Rect& want : rects)
      for (int shrink : {1, 4}) {
        std::vector<uint8_t> got;
        cuda::KeptImages::Rect clipped;
        ASSERT_TRUE(d->read_kept(r[i].kept, want, got, &clipped, shrink)) << "orientation " << o;
        const int x0 = std::max(0, want.x), y0 = std::max(0, want.y);
        EXPECT_EQ(clipped.x, x0);
        EXPECT_EQ(clipped.y, y0);
        EXPECT_EQ(clipped.width,
                  (std::min(upright.width, want.x + want.width) - x0) / shrink * shrink);
        EXPECT_EQ(clipped.height,
                  (std::min(upright.height, want.y + want.height) - y0) / shrink * shrink);
        const image::Image ref =
            image::testing::block_means(upright, x0, y0, clipped.width, clipped.height, shrink);
        ASSERT_EQ(got.size(), ref.bytes());
        std::vector<float> gpu(got.begin(), got.end()), cpu(ref.data(), ref.data() + ref.bytes());
        expect_close(
            gpu, cpu,
            "kept photo, orientation " + std::to_string(o) + ", shrink " + std::to_string(shrink),
            kLevels);
      }
  }
}

// The ring keeps the newest photos: once later decodes have filled it, the
// first photo's ticket reads nothing, the last one's still reads, and a
// photo larger than the whole ring is decoded but not kept.
TEST(GpuJpeg, KeptPhotosMakeRoomOldestFirst) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  const size_t photo = size_t(kW) * size_t(kH) * 3;
  d->keep_decoded(photo * 3 + photo / 2);  // three photos and a half
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_420);
  std::vector<uint64_t> tickets;
  for (int call = 0; call < 5; ++call) {
    Batch b;
    b.add(jpeg, 1, d->output_size(), true);
    const auto r = b.run(*d);
    ASSERT_TRUE(r[0].ok) << r[0].error;
    ASSERT_NE(r[0].kept, 0u);
    tickets.push_back(r[0].kept);
  }
  std::vector<uint8_t> px;
  cuda::KeptImages::Rect got;
  EXPECT_FALSE(d->read_kept(tickets[0], {0, 0, 10, 10}, px, &got))
      << "the first photo should be gone";
  EXPECT_TRUE(d->read_kept(tickets[4], {0, 0, 10, 10}, px, &got));
  EXPECT_TRUE(d->read_kept(tickets[3], {0, 0, 10, 10}, px, &got));
  // Larger than the ring: decoded all the same, not kept.
  const std::vector<uint8_t> large = color_jpeg(TJSAMP_420, 0, 2400, 1800);
  Batch b;
  b.add(large, 1, d->output_size(), true);
  const auto r = b.run(*d);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_EQ(r[0].kept, 0u);
  EXPECT_TRUE(d->read_kept(tickets[4], {0, 0, 10, 10}, px, &got))
      << "a photo not kept evicts nothing";
}

// Reads run on many threads at once, also while later decodes evict the
// photo they read: each read gives that photo's pixels or nothing, never
// the bytes of the photo decoded into its place (a gray one here).
TEST(GpuJpeg, KeptPhotoReadsOnManyThreadsWhileDecodesEvict) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  const size_t photo = size_t(kW) * size_t(kH) * 3;
  d->keep_decoded(photo * 2 + photo / 2);
  const std::vector<uint8_t> color = color_jpeg(TJSAMP_444), gray = gray_jpeg();
  Batch first;
  first.add(color, 1, d->output_size(), true);
  const auto r0 = first.run(*d);
  ASSERT_TRUE(r0[0].ok) << r0[0].error;
  ASSERT_NE(r0[0].kept, 0u);
  image::DecodeOptions full;
  full.apply_orientation = false;
  const image::Image ref = image::decode_image(color, full);
  const cuda::KeptImages::Rect want{100, 50, 300, 200};
  std::atomic<bool> stop{false};
  std::atomic<int> read{0}, gone{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 6; ++t)
    readers.emplace_back([&] {
      std::vector<uint8_t> px;
      cuda::KeptImages::Rect got;
      while (!stop) {
        if (!d->read_kept(r0[0].kept, want, px, &got)) {
          ++gone;
          continue;
        }
        double max_abs = 0, sum = 0;
        for (int y = 0; y < got.height; ++y)
          for (int x = 0; x < 3 * got.width; ++x) {
            const double e = std::abs(double(px[size_t(y) * size_t(got.width) * 3 + size_t(x)]) -
                                      double(ref.row(got.y + y)[3 * got.x + x]));
            max_abs = std::max(max_abs, e), sum += e;
          }
        const bool ok = max_abs <= kLevels.max_abs && sum / double(px.size()) <= kLevels.mean_abs;
        ++(ok ? read : wrong);
      }
    });
  for (int call = 0; call < 12; ++call) {
    Batch b;
    b.add(gray, 1, d->output_size(), true);
    const auto r = b.run(*d);
    EXPECT_TRUE(r[0].ok) << r[0].error;
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0) << "reads that gave another photo's bytes";
  EXPECT_GT(read.load(), 0);
  EXPECT_GT(gone.load(), 0) << "the photo should have been evicted by the later decodes";
}

// Decoded pixels for the kernel tests: random bytes (every value, no
// smoothness to hide an off-by-one tap), `channels` 1 or 3.
image::Image random_image(int w, int h, int channels, uint32_t seed) {
  image::Image img(w, h, channels);
  std::mt19937 rng(seed);
  for (size_t i = 0; i < img.bytes(); ++i) img.data()[i] = uint8_t(rng() >> 24);
  return img;
}

// A CUDA stream for one test, destroyed however the test ends.
struct TestStream {
  cudaStream_t s = nullptr;
  TestStream() { cuda::check_cuda(cudaStreamCreate(&s), "cudaStreamCreate(test)"); }
  ~TestStream() { cudaStreamDestroy(s); }
};

// The kernels alone on `stored` shown under `orientation`: uploaded as the
// JPEG decoder leaves an image (3-byte pixels, padded rows; a gray image in
// channel 0 with junk in the other two, which the kernels must not read),
// then planned, resampled and converted as JpegBatchDecoder does.
std::vector<float> gpu_preprocess(const image::Image& stored, int orientation,
                                  const image::PreprocessConfig& config) {
  const cuda::GpuPreprocessParams p = pipeline::gpu_preprocess_params(config);
  const bool gray = stored.channels == 1;
  const size_t pitch = size_t(stored.width) * 3 + 40;
  std::vector<uint8_t> host(pitch * size_t(stored.height), 0xa5);
  for (int y = 0; y < stored.height; ++y)
    for (int x = 0; x < stored.width; ++x)
      for (int c = 0; c < stored.channels; ++c)
        host[size_t(y) * pitch + size_t(x) * 3 + size_t(c)] =
            stored.row(y)[x * stored.channels + c];
  TestStream stream;
  cuda::DeviceBuffer pixels(host.size(), "cudaMalloc(test pixels)", {});
  cuda::check_cuda(
      cudaMemcpyAsync(pixels.get(), host.data(), host.size(), cudaMemcpyHostToDevice, stream.s),
      "cudaMemcpyAsync(test pixels)");
  const cuda::DevicePreprocessPlan plan = cuda::upload_preprocess_plan(
      cuda::plan_preprocess(stored.width, stored.height, orientation, p), stream.s);
  cuda::DeviceBuffer temp(size_t(plan.plan.rows) * size_t(p.output_width()) * 3,
                          "cudaMalloc(test rows)", {});
  cuda::DeviceBuffer out(p.output_floats() * sizeof(float), "cudaMalloc(test output)", {});
  const cuda::StoredRgb img = cuda::stored_rgb(static_cast<const uint8_t*>(pixels.get()), pitch,
                                               stored.width, stored.height, orientation, gray);
  cuda::launch_preprocess(img, plan.horizontal, plan.vertical, plan.plan.row0, plan.plan.rows,
                          static_cast<uint8_t*>(temp.get()), p, static_cast<float*>(out.get()),
                          stream.s);
  std::vector<float> r(p.output_floats(), -1000.f);
  cuda::check_cuda(cudaMemcpyAsync(r.data(), out.get(), r.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream.s),
                   "cudaMemcpyAsync(test output)");
  cuda::check_cuda(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize(test)");
  return r;
}

void expect_identical(const std::vector<float>& gpu, const std::vector<float>& cpu,
                      const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (gpu[i] != cpu[i] && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": first at float " << first << ", GPU " << gpu[first]
                        << ", CPU " << cpu[first];
}

image::PreprocessConfig planes_raw() {
  image::PreprocessConfig c;
  c.normalize = false;
  return c;
}

image::PreprocessConfig interleaved_normalized() {
  image::PreprocessConfig c = image::stretch_config(300, 200);
  c.normalize = true;
  return c;
}

// Every layout and value kind, cropped and stretched, square and not.
const std::vector<std::pair<std::string, image::PreprocessConfig>>& kernel_configs() {
  static const std::vector<std::pair<std::string, image::PreprocessConfig>> c = {
      {"classifier", kClassifier},
      {"detector", kDetector},
      {"stretch 320x192", image::stretch_config(320, 192)},
      {"planes raw", planes_raw()},
      {"interleaved normalized", interleaved_normalized()},
  };
  return c;
}

void expect_kernels_exact(const image::Image& stored, const std::string& name) {
  for (const auto& [config_name, config] : kernel_configs()) {
    for (int o = 1; o <= 8; ++o) {
      const std::string what = name + ", " + config_name + ", orientation " + std::to_string(o);
      expect_identical(gpu_preprocess(stored, o, config), cpu_preprocess(stored, o, config), what);
    }
  }
}

TEST(GpuPreprocess, KernelsEqualTheCpuPathBitForBit) {
  TANDEM_REQUIRE_GPU();
  expect_kernels_exact(random_image(1000, 750, 3, 1), "1000x750");
  expect_kernels_exact(random_image(513, 37, 3, 2), "513x37 (odd)");
  expect_kernels_exact(random_image(301, 199, 3, 3), "301x199 (upscaled)");
  expect_kernels_exact(random_image(1, 2, 3, 4), "1x2");
}

TEST(GpuPreprocess, GrayReadsOneChannel) {
  TANDEM_REQUIRE_GPU();
  expect_kernels_exact(random_image(1000, 750, 1, 5), "gray 1000x750");
  expect_kernels_exact(random_image(301, 199, 1, 6), "gray 301x199 (upscaled)");
}

// 4032x3024 to the detector's 512x512: ~7.9x down a row (17 taps a column),
// ~5.9x down a column; to the classifier's 224 crop ~11.8x (25 taps).
TEST(GpuPreprocess, TwelveMegapixelsManyTaps) {
  TANDEM_REQUIRE_GPU();
  const image::Image photo = random_image(4032, 3024, 3, 7);
  for (const image::PreprocessConfig& config : {kDetector, kClassifier})
    for (int o : {1, 6, 3, 8}) {
      const std::string what = "4032x3024 to " + std::to_string(config.output_width()) +
                               ", orientation " + std::to_string(o);
      expect_identical(gpu_preprocess(photo, o, config), cpu_preprocess(photo, o, config), what);
    }
}

TEST(GpuJpeg, DetectorInputMatchesCpuPathInEveryOrientation) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  ASSERT_EQ(d->output_size(), size_t(512) * 512 * 3);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_420);
  Batch b;
  for (int o = 1; o <= 8; ++o) b.add(jpeg, o, d->output_size());
  const std::vector<cuda::DecodeResult> r = b.run(*d);
  for (size_t i = 0; i < r.size(); ++i) {
    const int o = b.jobs[i].orientation;
    ASSERT_TRUE(r[i].ok) << "orientation " << o << ": " << r[i].error;
    const bool swap = image::orientation_swaps_axes(o);
    EXPECT_EQ(r[i].full_width, swap ? kH : kW);
    EXPECT_EQ(r[i].full_height, swap ? kW : kH);
    expect_close(b.outputs[i], cpu_reference(jpeg, o, kDetector),
                 "detector, orientation " + std::to_string(o), kLevels);
  }
}

// One call with a 12-MP photo, an odd size and an image smaller than the
// input (upscaled): plans of three geometries and the row buffer sized for
// the largest.
TEST(GpuJpeg, DetectorInputOfLargeOddAndSmallPhotos) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  const std::vector<uint8_t> large = color_jpeg(TJSAMP_420, 0, 4032, 3024);
  const std::vector<uint8_t> odd = color_jpeg(TJSAMP_420, 0, 1001, 751);
  const std::vector<uint8_t> small = color_jpeg(TJSAMP_420, 0, 301, 199);
  Batch b;
  b.add(large, 6, d->output_size());
  b.add(odd, 1, d->output_size());
  b.add(small, 8, d->output_size());
  b.add(large, 1, d->output_size());
  b.add(small, 1, d->output_size());
  const std::vector<const std::vector<uint8_t>*> files = {&large, &odd, &small, &large, &small};
  const char* names[] = {"4032x3024", "1001x751", "301x199", "4032x3024", "301x199"};
  const auto r = b.run(*d);
  for (size_t i = 0; i < r.size(); ++i) {
    const int o = b.jobs[i].orientation;
    ASSERT_TRUE(r[i].ok) << names[i] << ": " << r[i].error;
    expect_close(b.outputs[i], cpu_reference(*files[i], o, kDetector),
                 std::string("detector, ") + names[i] + " orientation " + std::to_string(o),
                 kLevels);
  }
}

TEST(GpuJpeg, DetectorInputOfGrayPhotos) {
  TANDEM_REQUIRE_GPU_JPEG(d, kDetector);
  const std::vector<uint8_t> gray = gray_jpeg();
  const std::vector<uint8_t> small = gray_jpeg(301, 199);
  if (!d->hardware_supports(gray))
    GTEST_SKIP() << "the hardware decoder does not take grayscale JPEGs here";
  Batch b;
  b.add(gray, 1, d->output_size());
  b.add(gray, 5, d->output_size());
  b.add(small, 7, d->output_size());
  const auto r = b.run(*d);
  for (size_t i = 0; i < r.size(); ++i) {
    const int o = b.jobs[i].orientation;
    ASSERT_TRUE(r[i].ok) << r[i].error;
    const bool upscaled = i == 2;
    expect_close(b.outputs[i], cpu_reference(upscaled ? small : gray, o, kDetector),
                 std::string("detector, gray ") + (upscaled ? "301x199" : "1000x750") +
                     " orientation " + std::to_string(o),
                 kLevels);
    const std::vector<float>& px = b.outputs[i];
    for (size_t k = 0; k < px.size(); k += 3) {  // R = G = B, as the CPU's gray replicates
      ASSERT_TRUE(px[k] == px[k + 1] && px[k] == px[k + 2]) << k;
    }
  }
}

}  // namespace
}  // namespace tandem::testing
