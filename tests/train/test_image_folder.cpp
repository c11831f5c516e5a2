// ImageFolder over Debian darknet's sample photos: class order and labels as
// torchvision's ImageFolder gives them (Debian's python3-torchvision, via
// /usr/bin/python3), every sample against torchvision's Resize(64) +
// CenterCrop(48) + ToTensor + Normalize on what PIL decodes in draft mode
// (Image.draft: libjpeg's DCT scaling to the smallest size that covers the
// request, the rule tandem's decoder follows; tolerance: mean |diff| <= 0.01
// and max |diff| <= 0.15 in normalized units), and the bad-input errors.
// (Against PIL's full-size decode the mean difference is 0.02-0.12 at this
// small size: the DCT-domain downscale is a different low-pass.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/image_test_util.h"
#include "train/data/image_folder.h"

using namespace tandem;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

image::PreprocessConfig small_config() {
  image::PreprocessConfig c;
  c.resize = 64, c.crop = 48;
  return c;
}

// root/<class>/<photo>.jpg from darknet's photos; false when they are missing.
bool make_folder(const fs::path& root) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> classes = {
      {"b_animals", {"dog", "eagle", "horses"}}, {"a_scenes", {"person", "scream"}}};
  for (const auto& [cls, photos] : classes) {
    fs::create_directories(root / cls);
    for (const std::string& p : photos) {
      if (!fs::exists(photo_path(p))) return false;
      fs::copy_file(photo_path(p), root / cls / (p + ".jpg"));
    }
  }
  std::ofstream(root / "a_scenes" / "notes.txt") << "not an image";  // ignored: extension
  return true;
}

}  // namespace

TEST(ImageFolder, LabelsAndPixelsMatchTorchvision) {
  ScratchDir dir;
  if (!make_folder(dir.path / "data")) GTEST_SKIP() << "darknet's sample photos are not installed";
  train::ImageFolder data((dir.path / "data").string(), small_config());
  ASSERT_EQ(data.classes(), (std::vector<std::string>{"a_scenes", "b_animals"}));
  ASSERT_EQ(data.size(), 5);
  EXPECT_EQ(data.image_shape(), (Shape{3, 48, 48}));
  std::string code =
      "import numpy as np, torchvision.datasets as D, torchvision.transforms as T\n"
      "t = T.Compose([T.Resize(64), T.CenterCrop(48), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], "
      "[0.229, 0.224, 0.225])])\n"
      "from PIL import Image\n"
      "def draft(path):\n"
      "    img = Image.open(path)\n"
      "    img.draft('RGB', (64, 64))\n"
      "    return img.convert('RGB')\n"
      "ds = D.ImageFolder('" + (dir.path / "data").string() + "', transform=t, loader=draft)\n"
      "with open('" + (dir.path / "labels.txt").string() + "', 'w') as f:\n"
      "    for i, (path, label) in enumerate(ds.samples):\n"
      "        f.write('%s %d\\n' % (path, label))\n"
      "        ds[i][0].numpy().astype(np.float32).tofile('" + (dir.path / "").string() + "%d.f32' % i)\n";
  if (!run_python(dir.path, code)) return;
  std::ifstream labels(dir.path / "labels.txt");
  for (int64_t i = 0; i < data.size(); ++i) {
    std::string path;
    int64_t label = -1;
    labels >> path >> label;
    EXPECT_EQ(path, data.path(i));
    train::Sample s = data.get(i);
    EXPECT_EQ(s.label, label) << path;
    std::vector<float> want(size_t(s.image.numel()));
    std::ifstream(dir.path / (std::to_string(i) + ".f32"), std::ios::binary)
        .read(reinterpret_cast<char*>(want.data()), std::streamsize(want.size() * sizeof(float)));
    double sum = 0, worst = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      const double d = std::fabs(double(s.image.data<float>()[k]) - want[k]);
      sum += d, worst = std::max(worst, d);
    }
    EXPECT_LE(sum / double(want.size()), 0.01) << path;
    EXPECT_LE(worst, 0.15) << path;
  }
}

TEST(ImageFolder, BadInputIsAnErrorNamingIt) {
  ScratchDir dir;
  if (!make_folder(dir.path / "data")) GTEST_SKIP() << "darknet's sample photos are not installed";
  std::ofstream(dir.path / "data" / "a_scenes" / "zz_truncated.jpg", std::ios::binary) << "\xff\xd8\xff\xe0garbage";
  train::ImageFolder data((dir.path / "data").string(), small_config());
  ASSERT_EQ(data.size(), 6);
  const int64_t bad = 2;  // a_scenes: person, scream, zz_truncated
  EXPECT_NE(error_of([&] { data.get(bad); }).find("zz_truncated.jpg"), std::string::npos);
  EXPECT_NO_THROW(data.get(3));
  fs::create_directories(dir.path / "empty_root");
  EXPECT_NE(error_of([&] { train::ImageFolder((dir.path / "empty_root").string(), small_config()); })
                .find("no class folders"),
            std::string::npos);
  fs::create_directories(dir.path / "data" / "c_empty");
  EXPECT_NE(error_of([&] { train::ImageFolder((dir.path / "data").string(), small_config()); })
                .find("class folder without images"),
            std::string::npos);
  EXPECT_NE(error_of([&] { train::ImageFolder((dir.path / "nowhere").string(), small_config()); }).find("not a folder"),
            std::string::npos);
}
