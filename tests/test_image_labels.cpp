// ImageNet class names from Debian's python3-torchvision and darknet.
// References: Python's own evaluation of torchvision's list literal, and the
// torchvision list itself for darknet's synset-sorted names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "image/labels.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

// Our C++ parse of _meta.py against Python importing it (one name per line).
TEST(Labels, TorchvisionParseMatchesPython) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  ASSERT_TRUE(run_python(dir, "from torchvision.models._meta import _IMAGENET_CATEGORIES as C\n"
                              "open('" + (dir / "names.txt").string() + "', 'w').write('\\n'.join(C))\n"));
  const auto ours = imagenet_labels_from_torchvision(kTorchvisionMetaPath);
  ASSERT_EQ(ours.size(), 1000u);
  EXPECT_EQ(ours, load_labels((dir / "names.txt").string()));
  EXPECT_EQ(ours[0], "tench");
  EXPECT_EQ(ours[207], "golden retriever");
  EXPECT_EQ(ours[999], "toilet tissue");
  EXPECT_EQ(imagenet_labels(), ours);
}

// The claim that darknet's first 1000 synsets, sorted, give torchvision's
// order: checked name by name. The raw darknet names differ in exactly two
// places (duplicates torchvision renamed), which labels.cpp renames too.
TEST(Labels, DarknetSortedSynsetsGiveTorchvisionOrder) {
  const auto tv = imagenet_labels_from_torchvision(kTorchvisionMetaPath);
  const auto dn = imagenet_labels_from_darknet(kDarknetShortnamesPath, kDarknetSynsetsPath);
  ASSERT_EQ(dn.size(), 1000u);
  for (size_t i = 0; i < tv.size(); ++i) EXPECT_EQ(dn[i], tv[i]) << "class " << i;
  EXPECT_EQ(dn[134], "crane bird");
  EXPECT_EQ(dn[517], "crane");
  EXPECT_EQ(dn[638], "maillot");
  EXPECT_EQ(dn[639], "maillot tank suit");
}

TEST(Labels, UserFilesAndErrors) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::string text = "cat\r\nsmall dog\n\nbird\n\n\n";
  write_bytes(dir / "labels.txt", text.data(), text.size());
  EXPECT_EQ(load_labels((dir / "labels.txt").string()),
            (std::vector<std::string>{"cat", "small dog", "", "bird"}));
  write_bytes(dir / "blank.txt", "\n\n", 2);
  EXPECT_THROW(load_labels((dir / "blank.txt").string()), Error);
  EXPECT_THROW(load_labels((dir / "missing.txt").string()), Error);
  const std::string py = "_IMAGENET_CATEGORIES = [\"a\", 'b\\'s',  # comment\n \"c\"]\n";
  write_bytes(dir / "meta.py", py.data(), py.size());
  try {
    imagenet_labels_from_torchvision((dir / "meta.py").string());
    ADD_FAILURE() << "3 names accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 3 names"), std::string::npos) << e.what();
  }
  const std::string broken = "_IMAGENET_CATEGORIES = [\"a\", \"b";
  write_bytes(dir / "broken.py", broken.data(), broken.size());
  EXPECT_THROW(imagenet_labels_from_torchvision((dir / "broken.py").string()), Error);
}
