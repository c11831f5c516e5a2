// pipeline/centernet.h decodes the heads the way the shipped CenterNet
// graph's own post-processing does (MaxPool peaks, TopKV2, box arithmetic):
// the reference is that graph's `tower_0/detections` output, run by tandem
// on a real photo. Skipped when the model is not installed.
#include <gtest/gtest.h>

#include <algorithm>
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

// The detector ranks peaks in the graph (Reshape + TopK appended after the
// model's peak test); the reference is the host decoding of the plain heat
// map above, on a batch of two photos (each image must get its own top k).
TEST(CenterNetDecode, DetectorRanksEachImagesPeaksLikeTheHostDecoding) {
  std::string model = pipeline::models_dir() + "/centernet.json";
  const char* photos[] = {kPhoto, "/usr/share/darknet/data/person.jpg"};
  if (!std::filesystem::exists(model) || !std::filesystem::exists(photos[1]))
    GTEST_SKIP() << "needs " << model << " (scripts/install-models) and darknet's photos";
  pipeline::DetectorOptions dopt;
  dopt.model = model;
  dopt.min_score = 0.05f;
  pipeline::Detector det(dopt);
  TfjsImportOptions o;
  o.outputs = {"tower_0/keypoints", "tower_0/wh"};
  o.dynamic_batch = true;
  Session heads(load_tfjs(model, o));
  pipeline::DetectorInput input(512, 512);
  Tensor x = Tensor::empty(DType::f32, {2, 512, 512, 3});
  for (int i = 0; i < 2; ++i)
    input.run(image::decode_image_file(photos[i], 512, 512), x.data<float>() + size_t(i) * 512 * 512 * 3);
  std::vector<std::vector<pipeline::Detection>> got = det.detect(x, {{512, 512}, {512, 512}});
  std::vector<Tensor> out = heads.run({x});
  for (size_t i = 0; i < 2; ++i) {
    const size_t cells = 128 * 128;
    pipeline::HeatmapView v{out[0].data<float>() + i * cells * 80, out[1].data<float>() + i * cells * 4, 128, 128, 80};
    std::vector<pipeline::Detection> want = pipeline::non_max_suppression(
        pipeline::decode_centernet(v, 4.0f, dopt.max_detections, dopt.min_score), dopt.iou, dopt.cross_class_iou,
        size_t(dopt.max_detections));
    ASSERT_EQ(got[i].size(), want.size()) << photos[i];
    ASSERT_GE(want.size(), 2u) << photos[i];
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ(got[i][j].class_id, want[j].class_id) << photos[i] << " #" << j;
      EXPECT_EQ(got[i][j].score, want[j].score) << photos[i] << " #" << j;
      // The detector clamps boxes to the photo.
      EXPECT_EQ(got[i][j].box.x1, std::clamp(want[j].box.x1, 0.f, 512.f)) << photos[i] << " #" << j;
      EXPECT_EQ(got[i][j].box.y2, std::clamp(want[j].box.y2, 0.f, 512.f)) << photos[i] << " #" << j;
    }
  }
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
