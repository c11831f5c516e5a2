// The host-side arithmetic of the face pipeline against human's own
// definitions (src/face/facemeshutil.ts generateAnchors, faceres.ts's age
// readout, match.ts's similarity), worked by hand from their code. The
// whole pipeline is compared with human itself in tests/faces.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/face_detector.h"
#include "pipeline/face_embedder.h"
#include "pipeline/face_stage.h"

using namespace tandem::pipeline;

TEST(Faces, BlazeFaceAnchorsAreHumansGrid) {
  const std::vector<Point2> a = blazeface_anchors(256);
  ASSERT_EQ(a.size(), 896u);  // 16 x 16 cells x 2, then 8 x 8 x 6
  EXPECT_FLOAT_EQ(a[0].x, 8);
  EXPECT_FLOAT_EQ(a[0].y, 8);
  EXPECT_FLOAT_EQ(a[1].x, 8);
  EXPECT_FLOAT_EQ(a[1].y, 8);  // two anchors a cell
  EXPECT_FLOAT_EQ(a[2].x, 24);
  EXPECT_FLOAT_EQ(a[2].y, 8);
  EXPECT_FLOAT_EQ(a[511].x, 248);
  EXPECT_FLOAT_EQ(a[511].y, 248);
  EXPECT_FLOAT_EQ(a[512].x, 16);
  EXPECT_FLOAT_EQ(a[512].y, 16);  // stride 32 begins
  EXPECT_FLOAT_EQ(a[517].x, 16);                                  // six a cell
  EXPECT_FLOAT_EQ(a[518].x, 48);
  EXPECT_FLOAT_EQ(a[895].x, 240);
  EXPECT_FLOAT_EQ(a[895].y, 240);
}

TEST(Faces, AgeIsTheBestBinNudgedTowardItsLikelierNeighbour) {
  float bins[10] = {0, 0, 0.1f, 0.6f, 0.3f, 0, 0, 0, 0, 0};
  // best bin 3, neighbours 0.1 below and 0.3 above: 10 * 3 + 100 * 0.3 = 60 -> 6.0
  EXPECT_FLOAT_EQ(age_of(bins, 10), 6.0f);
  float low[10] = {0, 0, 0.3f, 0.6f, 0.1f, 0, 0, 0, 0, 0};
  EXPECT_FLOAT_EQ(age_of(low, 10), 0.0f);  // 30 - 100 * 0.3 = 0
  float first[3] = {0.9f, 0.1f, 0};
  EXPECT_FLOAT_EQ(age_of(first, 3), 1.0f);  // no bin below: toward the one above
  EXPECT_FLOAT_EQ(age_of(first, 0), 0.0f);
}

TEST(Faces, SimilarityIsHumansWithItsDefaults) {
  std::vector<float> a(1024, 0.f), b(1024, 0.f);
  EXPECT_FLOAT_EQ(descriptor_similarity(a, b), 1.0f);
  b[0] = 10;  // distance 10: (0.8 - 0.5) / 0.6
  EXPECT_NEAR(descriptor_similarity(a, b), 0.5f, 1e-6);
  b[0] = 20;  // beyond 16: 0
  EXPECT_FLOAT_EQ(descriptor_similarity(a, b), 0.0f);
  EXPECT_FLOAT_EQ(descriptor_similarity(a, {}), 0.0f);
}

TEST(Faces, AnAnimalsFaceIsNoPersons) {
  auto face_at = [](float x) {
    Face f;
    f.box = {x, 10, x + 20, 30};
    return f;
  };
  const std::vector<DetectedObject> objects = {{"dog", 0.9f, {0, 0, 100, 100}},
                                               {"person", 0.8f, {50, 0, 150, 100}},
                                               {"bicycle", 0.7f, {200, 0, 300, 100}}};
  // In the dog only: dropped; in the dog and a person: kept; in a bicycle or
  // in nothing detected: kept.
  const std::vector<Face> kept =
      faces_on_people({face_at(5), face_at(60), face_at(210), face_at(400)}, objects);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_FLOAT_EQ(kept[0].box.x1, 60);
  EXPECT_FLOAT_EQ(kept[1].box.x1, 210);
  EXPECT_FLOAT_EQ(kept[2].box.x1, 400);
}
