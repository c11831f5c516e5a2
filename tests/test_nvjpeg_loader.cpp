// The GPU JPEG decoder's host side, which needs no GPU: loading libnvjpeg
// at run time (absent here: a null table and a reason naming the library;
// present on a GPU machine: every entry point bound), JpegBatchDecoder's
// refusal without a GPU (never an exception), and the preprocessing
// geometry the GPU kernels use against the CPU path's (image/resize.cpp's
// PIL weights, image/orientation.cpp's transforms), which are themselves
// checked against PIL.
#ifdef TANDEM_HAVE_CUDA
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cuda/context.h"
#include "cuda/jpeg_preprocess.h"
#include "cuda/nvjpeg/jpeg_batch_decoder.h"
#include "cuda/nvjpeg/nvjpeg_api.h"
#include "cuda/nvjpeg/resample_plan.h"
#include "image/decode.h"
#include "image/orientation.h"
#include "image/preprocess.h"
#include "image/resize.h"
#include "pipeline/gpu_jpeg.h"

using namespace tandem;

namespace {

TEST(NvjpegLoader, LoadsEveryEntryPointOrSaysWhichLibraryIsMissing) {
  std::string why;
  const cuda::nvjpeg::NvjpegApi* api = cuda::nvjpeg::load_nvjpeg(&why);
  if (!api) {
    EXPECT_NE(why.find("libnvjpeg"), std::string::npos) << why;
    return;
  }
  EXPECT_TRUE(api->CreateEx && api->Destroy && api->JpegStateCreate && api->JpegStateDestroy &&
              api->DecodeBatchedInitialize && api->DecodeBatched && api->JpegStreamCreate && api->JpegStreamDestroy &&
              api->JpegStreamParseHeader && api->JpegStreamGetJpegEncoding && api->JpegStreamGetFrameDimensions &&
              api->JpegStreamGetComponentsNum && api->DecodeBatchedSupported);
  EXPECT_EQ(cuda::nvjpeg::load_nvjpeg(), api) << "loaded once";
}

TEST(NvjpegLoader, StatusNamesAndErrors) {
  using namespace cuda::nvjpeg;
  EXPECT_EQ(status_name(NVJPEG_STATUS_BAD_JPEG), "NVJPEG_STATUS_BAD_JPEG");
  EXPECT_EQ(status_name(nvjpegStatus_t(42)), "nvJPEG status 42");
  EXPECT_NO_THROW(check_nvjpeg(NVJPEG_STATUS_SUCCESS, "nvjpegX"));
  try {
    check_nvjpeg(NVJPEG_STATUS_INCOMPLETE_BITSTREAM, "nvjpegDecodeBatched");
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "nvjpegDecodeBatched: NVJPEG_STATUS_INCOMPLETE_BITSTREAM");
  }
}

TEST(NvjpegLoader, DecoderIsNullWithAReasonWhereUnavailable) {
  std::string why;
  std::unique_ptr<cuda::JpegBatchDecoder> d;
  EXPECT_NO_THROW(d = cuda::JpegBatchDecoder::create(0, {}, &why));
  if (cuda::device_count() == 0 || !cuda::nvjpeg::load_nvjpeg()) {
    EXPECT_EQ(d, nullptr);
  }
  if (!d) {
    EXPECT_FALSE(why.empty());
  }
  EXPECT_NO_THROW(d = cuda::JpegBatchDecoder::create(1000, {}, &why));
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(why.find("cuda:1000"), std::string::npos) << why;
}

TEST(NvjpegLoader, InvalidParamsThrow) {
  cuda::GpuPreprocessParams p;
  p.crop = 300;  // > resize
  EXPECT_THROW(cuda::JpegBatchDecoder::create(0, p), Error);
}

// cuda::plan_resample_axis must give image::ResampleAxis's weights exactly.
void expect_same_axis(int in, int out, int first, int count, bool padded) {
  image::ResampleAxis cpu;
  cpu.build(in, out, first, count, image::ResampleFilter::bilinear, padded);
  const cuda::ResampleAxisPlan gpu = cuda::plan_resample_axis(in, out, first, count, padded);
  const std::string what = std::to_string(in) + "->" + std::to_string(out) + " [" + std::to_string(first) + ", +" +
                           std::to_string(count) + ")" + (padded ? " padded" : "");
  ASSERT_EQ(gpu.taps, cpu.taps) << what;
  EXPECT_EQ(gpu.start, cpu.start) << what;
  EXPECT_EQ(gpu.length, cpu.length) << what;
  EXPECT_EQ(gpu.weights, cpu.weights) << what;
}

TEST(GpuPreprocessPlan, FilterWeightsEqualTheCpuPaths) {
  for (bool padded : {false, true}) {
    expect_same_axis(4032, 341, 58, 224, padded);  // 12 MP photo, long side
    expect_same_axis(3024, 256, 16, 224, padded);  // its short side
    expect_same_axis(1000, 341, 58, 224, padded);
    expect_same_axis(750, 256, 16, 224, padded);
    expect_same_axis(200, 256, 16, 224, padded);   // upscaling
    expect_same_axis(3, 256, 16, 224, padded);     // fewer pixels than taps
    expect_same_axis(257, 256, 0, 256, padded);
    expect_same_axis(4032, 512, 0, 512, padded);  // the detector's input, whole
    expect_same_axis(378, 512, 0, 512, padded);   // a 1/8 decode of it, upscaled
  }
}

// plan_preprocess against image::preprocess_window and image::ResampleAxis
// for the same description, in the upright frame of `orientation`.
void expect_plan_is_cpus(int stored_w, int stored_h, int orientation,
                         const image::PreprocessConfig& c) {
  const cuda::GpuPreprocessParams p = pipeline::gpu_preprocess_params(c);
  const cuda::PreprocessPlan plan = cuda::plan_preprocess(stored_w, stored_h, orientation, p);
  const std::string what = std::to_string(stored_w) + "x" + std::to_string(stored_h) +
                           " orientation " + std::to_string(orientation) + " -> " +
                           std::to_string(c.output_width()) + "x" +
                           std::to_string(c.output_height());
  const bool swap = image::orientation_swaps_axes(orientation);
  ASSERT_EQ(plan.upright_width, swap ? stored_h : stored_w) << what;
  ASSERT_EQ(plan.upright_height, swap ? stored_w : stored_h) << what;
  const image::PreprocessWindow win =
      image::preprocess_window(c, plan.upright_width, plan.upright_height);
  image::ResampleAxis h, v;
  h.build(plan.upright_width, win.resized_width, win.x0, c.output_width(), c.filter, true);
  v.build(plan.upright_height, win.resized_height, win.y0, c.output_height(), c.filter, false);
  ASSERT_EQ(plan.horizontal.taps, h.taps) << what;
  EXPECT_EQ(plan.horizontal.start, h.start) << what;
  EXPECT_EQ(plan.horizontal.weights, h.weights) << what;
  ASSERT_EQ(plan.vertical.taps, v.taps) << what;
  EXPECT_EQ(plan.vertical.start, v.start) << what;
  EXPECT_EQ(plan.vertical.length, v.length) << what;
  EXPECT_EQ(plan.vertical.weights, v.weights) << what;
  EXPECT_EQ(plan.row0, v.start.front()) << what;
  EXPECT_EQ(plan.rows, v.start.back() + v.length.back() - v.start.front()) << what;
}

TEST(GpuPreprocessPlan, GeometryIsTorchvisionsInTheUprightFrame) {
  for (int o = 1; o <= 8; ++o) expect_plan_is_cpus(1000, 750, o, image::PreprocessConfig{});
  const cuda::GpuPreprocessParams p;
  EXPECT_THROW(cuda::plan_preprocess(10, 10, 9, p), Error);
  EXPECT_THROW(cuda::plan_preprocess(0, 10, 1, p), Error);
}

// The detector's input (the whole image stretched, no crop) and a
// non-square one: 12-MP photos (~8x down, 17 taps a column), odd sizes, and
// images smaller than the output (upscaling), in every orientation.
TEST(GpuPreprocessPlan, StretchGeometryEqualsTheCpuPaths) {
  const int sizes[][2] = {{4032, 3024}, {1000, 750}, {513, 37}, {300, 200}, {1, 2}, {10000, 10000}};
  for (const image::PreprocessConfig& c :
       {image::stretch_config(512, 512), image::stretch_config(320, 192)})
    for (const auto& s : sizes)
      for (int o = 1; o <= 8; ++o) expect_plan_is_cpus(s[0], s[1], o, c);
}

// The GPU's description says what the CPU's does, defaults included.
TEST(GpuPreprocessPlan, ParamsMirrorTheCpuConfig) {
  const image::PreprocessConfig cpu;
  const cuda::GpuPreprocessParams gpu;
  EXPECT_EQ(gpu.resize, cpu.resize);
  EXPECT_EQ(gpu.crop, cpu.crop);
  EXPECT_EQ(gpu.normalize, cpu.normalize);
  EXPECT_EQ(gpu.max_pixels, image::DecodeOptions{}.max_pixels);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(gpu.mean[c], cpu.mean[size_t(c)]);
    EXPECT_EQ(gpu.std[c], cpu.std[size_t(c)]);
  }
  const cuda::GpuPreprocessParams det =
      pipeline::gpu_preprocess_params(image::stretch_config(512, 384));
  EXPECT_EQ(det.mode, cuda::GpuResizeMode::stretch);
  EXPECT_EQ(det.layout, cuda::GpuPixelLayout::interleaved);
  EXPECT_FALSE(det.normalize);
  EXPECT_EQ(det.output_width(), 512);
  EXPECT_EQ(det.output_height(), 384);
  EXPECT_EQ(det.output_floats(),
            image::Preprocessor(image::stretch_config(512, 384)).output_size());
  EXPECT_NO_THROW(cuda::check_preprocess_params(det));
  cuda::GpuPreprocessParams bad = det;
  bad.height = 0;
  EXPECT_THROW(cuda::check_preprocess_params(bad), Error);
  bad = det;
  bad.std[1] = 0;  // unused without normalization
  EXPECT_NO_THROW(cuda::check_preprocess_params(bad));
  bad.normalize = true;
  EXPECT_THROW(cuda::check_preprocess_params(bad), Error);
}

// stored_rgb's walk reads, for upright (x, y), the pixel image::orient_image
// puts there.
TEST(GpuPreprocessPlan, OrientationWalkMatchesOrientImage) {
  const int w = 5, h = 3;
  const size_t pitch = size_t(w) * 3 + 7;  // a padded row, as a decoder may leave
  std::vector<uint8_t> pitched(pitch * size_t(h));
  image::Image stored(w, h, 3);
  std::mt19937 rng(7);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x) pitched[size_t(y) * pitch + size_t(x)] = stored.row(y)[x] = uint8_t(rng());
  for (int o = 1; o <= 8; ++o) {
    image::Image upright;
    image::orient_image(stored, o, upright);
    const cuda::StoredRgb s = cuda::stored_rgb(pitched.data(), pitch, w, h, o, false);
    for (int y = 0; y < upright.height; ++y)
      for (int x = 0; x < upright.width; ++x)
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(s.data[s.base + x * s.step_x + y * s.step_y + c], upright.row(y)[x * 3 + c])
              << "orientation " << o << " at " << x << "," << y;
  }
}

}  // namespace
#endif  // TANDEM_HAVE_CUDA
