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
#include "image/orientation.h"
#include "image/preprocess.h"
#include "image/resize.h"

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
  }
}

TEST(GpuPreprocessPlan, GeometryIsTorchvisionsInTheUprightFrame) {
  const cuda::GpuPreprocessParams p;
  for (int o = 1; o <= 8; ++o) {
    const cuda::PreprocessPlan plan = cuda::plan_preprocess(1000, 750, o, p);
    const bool swap = image::orientation_swaps_axes(o);
    EXPECT_EQ(plan.upright_width, swap ? 750 : 1000);
    EXPECT_EQ(plan.upright_height, swap ? 1000 : 750);
    const image::Size2 r = image::shorter_side_size(plan.upright_width, plan.upright_height, p.resize);
    expect_same_axis(plan.upright_width, r.width, image::center_crop_offset(r.width, p.crop), p.crop, true);
    image::ResampleAxis v;
    v.build(plan.upright_height, r.height, image::center_crop_offset(r.height, p.crop), p.crop,
            image::ResampleFilter::bilinear, false);
    EXPECT_EQ(plan.vertical.start, v.start);
    EXPECT_EQ(plan.row0, v.start.front());
    EXPECT_EQ(plan.rows, v.start.back() + v.length.back() - v.start.front());
  }
  EXPECT_THROW(cuda::plan_preprocess(10, 10, 9, p), Error);
  EXPECT_THROW(cuda::plan_preprocess(0, 10, 1, p), Error);
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
