// The detector's class names travel with it: pipeline::detector_labels reads
// the list installed beside the model file before the system-wide ones.
// References: files written here, and torchvision's COCO 2017 list for the
// names scripts/install-models extracts from @vladmandic/human.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "image/labels.h"
#include "pipeline/model_store.h"
#include "temp_dir.h"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

std::string names_starting(const std::string& first) {
  std::string text = first + "\n";
  for (int i = 1; i < 80; ++i) text += "class" + std::to_string(i) + "\n";
  return text;
}

std::string error_of(const std::string& model) {
  try {
    pipeline::detector_labels(model);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no tandem::Error)";
}

}  // namespace

TEST(ModelLabels, FilesBesideTheModel) {
  EXPECT_EQ(pipeline::label_files_beside("/m/centernet.json"),
            (std::vector<std::string>{"/m/centernet.labels", "/m/coco.names"}));
  EXPECT_EQ(pipeline::label_files_beside("det.json"),
            (std::vector<std::string>{"det.labels", "coco.names"}));
}

TEST(ModelLabels, StemLabelsThenCocoNamesThenSystem) {
  tandem::testing::TempDir dir("model_labels");
  const std::string model = dir.file("det.json");  // never read: only its name matters
  dir.write("coco.names", names_starting("from coco.names"));
  EXPECT_EQ(pipeline::detector_labels(model)[0], "from coco.names");
  dir.write("det.labels", names_starting("from det.labels"));
  EXPECT_EQ(pipeline::detector_labels(model)[0], "from det.labels");
  fs::remove(dir.file("det.labels"));
  fs::remove(dir.file("coco.names"));
  if (!fs::exists(image::kTorchvisionMetaPath) && !fs::exists(image::kDarknetCocoNamesPath))
    GTEST_SKIP() << "no system-wide COCO list (python3-torchvision or darknet)";
  EXPECT_EQ(pipeline::detector_labels(model), image::coco_labels());
}

TEST(ModelLabels, BrokenFileNamesItAndTheInstaller) {
  tandem::testing::TempDir dir("model_labels");
  dir.write("det.labels", "person\n");
  const std::string e = error_of(dir.file("det.json"));
  EXPECT_NE(e.find(dir.file("det.labels")), std::string::npos) << e;
  EXPECT_NE(e.find("scripts/install-models"), std::string::npos) << e;
}

// What scripts/install-models extracted from human's labels.ts is COCO
// 2017's list as torchvision spells it, and the installed detector uses it.
TEST(ModelLabels, InstalledDetectorNamesAreCoco2017) {
  const fs::path labels = fs::path(pipeline::models_dir()) / "centernet.labels";
  if (!fs::exists(labels)) GTEST_SKIP() << "needs " << labels << " (scripts/install-models)";
  const std::vector<std::string> installed = image::load_labels(labels.string());
  EXPECT_EQ(
      pipeline::detector_labels((fs::path(pipeline::models_dir()) / "centernet.json").string()),
      installed);
  if (!fs::exists(image::kTorchvisionMetaPath))
    GTEST_SKIP() << "needs python3-torchvision for COCO 2017's list";
  EXPECT_EQ(installed, image::coco_labels_from_torchvision(image::kTorchvisionMetaPath));
}
