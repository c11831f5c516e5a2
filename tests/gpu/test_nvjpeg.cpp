// The GPU JPEG path (cuda/nvjpeg/jpeg_batch_decoder.h: nvJPEG's hardware
// engines + cuda/jpeg_preprocess.cu) against the CPU path it stands in for:
// image::decode_image at full size (libjpeg-turbo, islow IDCT), oriented
// with image::orient_image, then image::Preprocessor (PIL-exact resize,
// center crop, normalisation; itself checked against torchvision).
//
// Tolerance: the resampling and normalisation are the same integer and
// float32 arithmetic on both sides, so any difference comes from the JPEG
// decoders: the engines' IDCT and chroma upsampling differ from
// libjpeg-turbo's by a level or two per pixel (more on sharp chroma edges,
// which libjpeg's "fancy" upsampling smooths). After the ~3x antialiased
// downscale that is at most a few levels: |diff| <= 0.1 after normalising
// (about 5.7 levels at std 0.225) and a mean |diff| <= 0.02 (about 1.1
// levels).
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cuda/nvjpeg/jpeg_batch_decoder.h"
#include "gpu_test_util.h"
#include "image/decode.h"
#include "image/orientation.h"
#include "image/preprocess.h"

namespace tandem::testing {
namespace {

constexpr double kMaxAbs = 0.1, kMeanAbs = 0.02;

#define TANDEM_REQUIRE_GPU_JPEG(decoder)                                                 \
  TANDEM_REQUIRE_GPU();                                                                  \
  std::string why_no_decoder;                                                            \
  std::unique_ptr<cuda::JpegBatchDecoder> decoder =                                      \
      cuda::JpegBatchDecoder::create(0, cuda::GpuPreprocessParams{}, &why_no_decoder);   \
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

std::vector<uint8_t> color_jpeg(int subsamp, int flags = 0) {
  return encode(synthetic_rgb(kW, kH), kW, kH, TJPF_RGB, subsamp, flags);
}
std::vector<uint8_t> gray_jpeg() { return encode(gray_of(synthetic_rgb(kW, kH)), kW, kH, TJPF_GRAY, TJSAMP_GRAY, 0); }

// The CPU path: full-size decode, upright, preprocessed.
std::vector<float> cpu_reference(const std::vector<uint8_t>& jpeg, int orientation, const cuda::GpuPreprocessParams& p) {
  image::DecodeOptions opt;  // min_width = min_height = 0: no DCT scaling
  opt.apply_orientation = false;
  const image::Image stored = image::decode_image(jpeg, opt);
  image::Image upright;
  if (orientation == 1) {
    upright = stored;
  } else {
    image::orient_image(stored, orientation, upright);
  }
  image::PreprocessConfig cfg;
  cfg.resize = p.resize;
  cfg.crop = p.crop;
  for (int c = 0; c < 3; ++c) cfg.mean[size_t(c)] = p.mean[c], cfg.std[size_t(c)] = p.std[c];
  image::Preprocessor pre(cfg);
  std::vector<float> out(pre.output_size());
  pre.run(upright, out);
  return out;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double max_abs = 0, sum = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double d = std::fabs(double(gpu[i]) - double(cpu[i]));
    ASSERT_FALSE(std::isnan(gpu[i])) << what << " at " << i;
    max_abs = std::max(max_abs, d);
    sum += d;
  }
  const double mean_abs = sum / double(cpu.size());
  EXPECT_LE(max_abs, kMaxAbs) << what;
  EXPECT_LE(mean_abs, kMeanAbs) << what;
  std::printf("[ INFO     ] %s: max |diff| %.4f, mean |diff| %.5f\n", what.c_str(), max_abs, mean_abs);
}

struct Batch {
  std::vector<std::vector<float>> outputs;
  std::vector<cuda::DecodeJob> jobs;
  void add(const std::vector<uint8_t>& jpeg, int orientation, size_t floats) {
    outputs.emplace_back(floats, -1000.f);
    jobs.push_back({jpeg, orientation, nullptr});
  }
  std::vector<cuda::DecodeResult> run(cuda::JpegBatchDecoder& d) {
    for (size_t i = 0; i < jobs.size(); ++i) jobs[i].out = outputs[i].data();
    return d.decode(jobs);
  }
};

TEST(GpuJpeg, Baseline420MatchesCpuPathInEveryOrientation) {
  TANDEM_REQUIRE_GPU_JPEG(d);
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
    expect_close(b.outputs[i], cpu_reference(jpeg, o, d->params()), "4:2:0 orientation " + std::to_string(o));
  }
}

TEST(GpuJpeg, GrayReplicatesItsChannel) {
  TANDEM_REQUIRE_GPU_JPEG(d);
  const std::vector<uint8_t> jpeg = gray_jpeg();
  if (!d->hardware_supports(jpeg)) GTEST_SKIP() << "the hardware decoder does not take grayscale JPEGs here";
  Batch b;
  b.add(jpeg, 1, d->output_size());
  b.add(jpeg, 6, d->output_size());
  const auto r = b.run(*d);
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].ok) << r[i].error;
    const int o = b.jobs[i].orientation;
    expect_close(b.outputs[i], cpu_reference(jpeg, o, d->params()), "gray orientation " + std::to_string(o));
  }
}

TEST(GpuJpeg, Baseline444MatchesCpuPath) {
  TANDEM_REQUIRE_GPU_JPEG(d);
  const std::vector<uint8_t> jpeg = color_jpeg(TJSAMP_444);
  if (!d->hardware_supports(jpeg)) GTEST_SKIP() << "the hardware decoder does not take 4:4:4 JPEGs here";
  Batch b;
  b.add(jpeg, 8, d->output_size());
  const auto r = b.run(*d);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  expect_close(b.outputs[0], cpu_reference(jpeg, 8, d->params()), "4:4:4 orientation 8");
}

TEST(GpuJpeg, ProgressiveAndGarbageAreNotForTheHardware) {
  TANDEM_REQUIRE_GPU_JPEG(d);
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
  expect_close(b.outputs[2], cpu_reference(good, 1, d->params()), "good file beside refused ones");
}

TEST(GpuJpeg, CorruptFileFailsAloneInABatch) {
  TANDEM_REQUIRE_GPU_JPEG(d);
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
    expect_close(b.outputs[i], cpu_reference(good, o, d->params()), "good file " + std::to_string(i) + " beside corrupt ones");
  }
}

// Calls of different batch sizes re-initialise the batched decoder and give
// the same floats for the same file; a decoder is reusable after a failure.
TEST(GpuJpeg, RepeatedCallsAreDeterministic) {
  TANDEM_REQUIRE_GPU_JPEG(d);
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

}  // namespace
}  // namespace tandem::testing
