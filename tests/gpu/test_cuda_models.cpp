// The shipped TF.js models (scripts/install-models) whole, with every
// output of their signature, CenterNet's post-processing included (MaxPool
// peaks, TopK, FloorDiv / FloorMod, Gather, Concat): every op runs on cuda:0
// in fp32, fp16 and bf16, and the fp32 outputs match the CPU backend within
// 1e-3 of the reference norm (deep convolution stacks summed in another
// order). CenterNet's detections on a real photo: the same confident boxes,
// classes and scores. Skipped when the models are not installed.
#include <cmath>
#include <filesystem>
#include <string>

#include "formats/load_model.h"
#include "gpu_test_util.h"
#include "image/decode.h"
#include "pipeline/detector.h"
#include "pipeline/model_store.h"

namespace tandem::testing {
namespace {

constexpr const char* kModels[] = {"centernet", "blazeface", "emotion", "faceres"};
constexpr const char* kPhoto = "/usr/share/darknet/data/dog.jpg";

std::string model_path(const std::string& name) {
  return pipeline::models_dir() + "/" + name + ".json";
}

// Batch 2 where the model leaves the batch open.
std::vector<Tensor> random_inputs(const Session& s, uint32_t seed) {
  std::vector<Tensor> in;
  for (TensorDesc d : s.input_descs()) {
    for (int64_t& e : d.shape)
      if (e < 0) e = 2;
    in.push_back(random_f32(d.shape, seed++, 0.f, 255.f));
  }
  return in;
}

bool all_finite(const Tensor& t) {
  if (t.dtype() != DType::f32) return true;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.data<float>()[i])) return false;
  return true;
}

TEST(CudaModels, EveryShippedModelRunsOnTheGpu) {
  TANDEM_REQUIRE_GPU();
  int ran = 0;
  for (const char* name : kModels) {
    const std::string path = model_path(name);
    if (!std::filesystem::exists(path)) continue;
    Graph g = load_model(path);
    Session cpu(g, SessionOptions::on(Device::cpu()));
    std::vector<Tensor> in = random_inputs(cpu, 1);
    std::vector<Tensor> want = cpu.run(in);
    for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
      const std::string at = std::string(name) + " " + precision_name(p);
      Session gpu(g, SessionOptions::on(Device::cuda(0), p));
      std::vector<Tensor> got;
      ASSERT_NO_THROW(got = gpu.run(in)) << at;
      ASSERT_EQ(got.size(), want.size()) << at;
      for (size_t i = 0; i < got.size(); ++i) {
        const std::string out = at + " output " + gpu.output_names()[i];
        ASSERT_EQ(got[i].shape(), want[i].shape()) << out;
        EXPECT_TRUE(all_finite(got[i])) << out;
        // Detections are ranked by TopK: scores a rounding apart may swap
        // rows; CenterNetDetectionsOnAPhoto compares them.
        bool ranked = gpu.output_names()[i].find("detections") != std::string::npos;
        if (p == Precision::fp32 && !ranked) {
          EXPECT_LE(relative_error(got[i], want[i]), 1e-3) << out;
        }
      }
    }
    ++ran;
  }
  if (ran == 0)
    GTEST_SKIP() << "no model installed in " << pipeline::models_dir()
                 << " (scripts/install-models)";
}

// x1 y1 x2 y2 score class per row, best first; rows below a score of 0.01
// are near-zero fillers whose order is arbitrary.
TEST(CudaModels, CenterNetDetectionsOnAPhoto) {
  TANDEM_REQUIRE_GPU();
  const std::string path = model_path("centernet");
  if (!std::filesystem::exists(path) || !std::filesystem::exists(kPhoto))
    GTEST_SKIP() << "needs " << path << " (scripts/install-models) and " << kPhoto << " (darknet)";
  pipeline::DetectorInput input(512, 512);
  Tensor x = Tensor::empty(DType::f32, {1, 512, 512, 3});
  input.run(image::decode_image_file(kPhoto, 512, 512), x.data<float>());
  Graph g = load_model(path);
  std::vector<Tensor> cpu = Session(g).run({x});
  std::vector<Tensor> gpu = Session(g, SessionOptions::on(Device::cuda(0))).run({x});
  Session names(g);
  size_t d = 0;
  while (d < cpu.size() && names.output_names()[d].find("detections") == std::string::npos) ++d;
  ASSERT_LT(d, cpu.size());
  ASSERT_EQ(gpu[d].shape(), cpu[d].shape());
  const float *want = cpu[d].data<float>(), *got = gpu[d].data<float>();
  int compared = 0;
  for (int64_t r = 0; r < cpu[d].dim(1); ++r) {
    const float *w = want + r * 6, *o = got + r * 6;
    if (w[4] < 0.01f) break;
    EXPECT_EQ(o[5], w[5]) << "class of row " << r;
    EXPECT_NEAR(o[4], w[4], 1e-4f) << "score of row " << r;
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(o[k], w[k], 1e-2f) << "box of row " << r;
    ++compared;
  }
  EXPECT_GE(compared, 3) << "the photo should give a few confident peaks";
}

}  // namespace
}  // namespace tandem::testing
