// `--profile` of a training step shows it per layer: every named layer's
// forward is a zone "forward <name>" (nested in its container's), the ops
// its forward recorded run their backward in "backward <name>", and a layer
// split between devices shows each side ("split <name> home|cpu forward").
// Checked on a real session's summary (profile/summary_io.h), the counts
// against the number of steps.
#include <gtest/gtest.h>

#include <string>

#include "profile/session.h"
#include "profile/summary_io.h"
#include "tests/temp_dir.h"
#include "tests/train/split_test_util.h"
#include "train/layers.h"
#include "train/split/place.h"

namespace tandem::train {
namespace {

#if TANDEM_PROFILE
using profile::find_stage;

// A conv-bn-relu block and a linear head, the conv split between two "sides"
// on the CPU (home cpu): three steps of forward + backward.
TEST(LayerProfile, ForwardAndBackwardZonesPerLayerAndPerSplitSide) {
  tandem::testing::TempDir dir("layer_profile");
  {
    profile::TraceSession session(profile::SessionOutputs{"", dir.path().string()});
    Rng rng(3);
    Sequential model;
    auto& features = model.add("features", std::make_unique<Sequential>());
    features.emplace<Conv2d>(2, 4, 3, Conv2dOptions{.padding = 1}, rng);
    features.emplace<BatchNorm2d>(4);
    features.emplace<Activation>(ops::Activation{ops::ActivationKind::relu});
    features.emplace<Flatten>();
    model.add("head", std::make_unique<Linear>(4 * 5 * 5, 3, true, rng));
    place_hetero(features, Device::cpu(), SplitSetting{false, 0.5});
    for (int step = 0; step < 3; ++step) {
      Var y = model(Var(testing::random_host({2, 2, 5, 5}, 10 + step), true));
      backward(y, testing::random_host({2, 3}, 20 + step));
    }
  }
  const profile::ProfileSummary s = profile::read_summary(dir.path().string());
  for (const char* name : {"forward features", "forward features.0", "forward features.1", "forward features.2",
                           "forward head", "backward features.0", "backward features.1", "backward features.2",
                           "backward head", "split features.0 home forward", "split features.0 cpu forward",
                           "split features.0 home backward", "split features.0 cpu backward"}) {
    const profile::StageSummary* st = find_stage(s, name);
    ASSERT_NE(st, nullptr) << name;
    EXPECT_EQ(st->count, 3u) << name;
  }
  // The model itself (no name) opens no layer zone of its own.
  EXPECT_EQ(find_stage(s, "forward "), nullptr);
  // One row per named layer, host time from those zones; the split layer's
  // CPU part inside its own time.
  auto row = [&](const std::string& layer) -> const profile::LayerRow* {
    for (const auto& r : s.layers)
      if (r.layer == layer) return &r;
    return nullptr;
  };
  for (const char* layer : {"features", "features.0", "features.1", "features.2", "features.3", "head"}) {
    const profile::LayerRow* r = row(layer);
    ASSERT_NE(r, nullptr) << layer;
    EXPECT_EQ(r->forward_ns, find_stage(s, std::string("forward ") + layer)->total_ns) << layer;
  }
  const profile::LayerRow& conv = *row("features.0");
  EXPECT_EQ(conv.backward_ns, find_stage(s, "backward features.0")->total_ns);
  EXPECT_EQ(conv.cpu_side_ns, find_stage(s, "split features.0 cpu forward")->total_ns +
                                  find_stage(s, "split features.0 cpu backward")->total_ns);
  EXPECT_GT(conv.cpu_side_ns, 0u);
  EXPECT_LE(conv.cpu_side_ns, conv.forward_ns + conv.backward_ns);
  EXPECT_EQ(conv.gpu_ns, 0u);  // no GPU in this run
  // A container's row holds its children's.
  const profile::LayerRow& features = *row("features");
  EXPECT_GE(features.forward_ns, conv.forward_ns);
  EXPECT_EQ(features.backward_ns, conv.backward_ns + row("features.1")->backward_ns +
                                      row("features.2")->backward_ns + row("features.3")->backward_ns);
  EXPECT_EQ(features.cpu_side_ns, conv.cpu_side_ns);
}
#endif

}  // namespace
}  // namespace tandem::train
