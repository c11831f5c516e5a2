// pipeline/centernet.h decodes the heads the way the shipped CenterNet
// graph's own post-processing does (MaxPool peaks, TopKV2, box arithmetic):
// the reference is that graph's `tower_0/detections` output, run by tandem
// on a real photo. Skipped when the model is not installed.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/tfjs/tfjs_importer.h"
#include "graph/session.h"
#include "image/decode.h"
#include "pipeline/centernet.h"
#include "pipeline/detector.h"
#include "pipeline/model_store.h"

namespace tandem {
namespace {

constexpr const char* kPhoto = "/usr/share/darknet/data/dog.jpg";

TEST(CenterNetDecode, MatchesTheModelsOwnDetectionsOutput) {
  std::string model = pipeline::models_dir() + "/centernet.json";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(kPhoto))
    GTEST_SKIP() << "needs " << model << " (scripts/install-models) and " << kPhoto << " (darknet)";
  TfjsImportOptions o;
  o.outputs = {"tower_0/keypoints", "tower_0/wh", "tower_0/detections"};
  Session s(load_tfjs(model, o));
  pipeline::DetectorInput input(512, 512);
  Tensor x = Tensor::empty(DType::f32, {1, 512, 512, 3});
  input.run(image::decode_image_file(kPhoto, 512, 512), x.data<float>());
  std::vector<Tensor> out = s.run({x});
  const Tensor &heat = out[0], &wh = out[1], &ref = out[2];
  ASSERT_EQ(ref.shape(), (Shape{1, 100, 6}));
  pipeline::HeatmapView v{heat.data<float>(), wh.data<float>(), 128, 128, 80};
  std::vector<pipeline::Detection> got = pipeline::decode_centernet(v, 4.0f, 100, 0.0f);
  const float* r = ref.data<float>();
  int compared = 0;
  for (int i = 0; i < 100; ++i) {
    const float* row = r + i * 6;  // x1 y1 x2 y2 score class
    if (row[4] < 0.01f) break;     // the rest are near-zero fillers whose order is arbitrary
    ASSERT_LT(size_t(i), got.size());
    const pipeline::Detection& d = got[size_t(i)];
    EXPECT_EQ(d.class_id, int(row[5])) << "row " << i;
    EXPECT_FLOAT_EQ(d.score, row[4]) << "row " << i;
    EXPECT_NEAR(d.box.x1, row[0], 1e-3f) << "row " << i;
    EXPECT_NEAR(d.box.y1, row[1], 1e-3f) << "row " << i;
    EXPECT_NEAR(d.box.x2, row[2], 1e-3f) << "row " << i;
    EXPECT_NEAR(d.box.y2, row[3], 1e-3f) << "row " << i;
    ++compared;
  }
  EXPECT_GE(compared, 3) << "the photo should give a few confident peaks";
}

TEST(Detection, NmsIsPerClassAndKeepsTheBest) {
  using pipeline::Detection;
  std::vector<Detection> d = {{1, 0.9f, {0, 0, 10, 10}}, {1, 0.8f, {1, 1, 11, 11}},  // same class, IoU 0.68
                              {2, 0.7f, {1, 1, 11, 11}},    // other class, IoU 0.68 < 0.7: kept
                              {3, 0.65f, {0, 0, 10, 11}},   // other class, IoU 0.91: same object
                              {1, 0.6f, {20, 20, 30, 30}}};
  std::vector<Detection> k = pipeline::non_max_suppression(d, 0.5f, 0.7f, 10);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].score, 0.9f);
  EXPECT_EQ(k[1].class_id, 2);
  EXPECT_EQ(k[2].score, 0.6f);
  EXPECT_EQ(pipeline::non_max_suppression(d, 0.5f, 0.7f, 2).size(), 2u);
  EXPECT_NEAR(pipeline::iou({0, 0, 10, 10}, {5, 0, 15, 10}), 50.f / 150.f, 1e-6f);
}

TEST(Detection, TagsCountPerClassBestScoreFirst) {
  std::vector<pipeline::Detection> d = {{16, 0.93f, {}}, {1, 0.88f, {}}, {16, 0.4f, {}}};
  std::vector<std::string> labels(80, "x");
  labels[16] = "dog";
  labels[1] = "bicycle";
  EXPECT_EQ(pipeline::format_tags(pipeline::tags_of(d, labels)), "dog \u00d72 0.93, bicycle \u00d71 0.88");
}

}  // namespace
}  // namespace tandem
