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

namespace {

// 80 lines "<prefix>0" ... "<prefix>79", with `first` as line 0 when given.
std::string coco_like_names(const std::string& prefix, const std::string& first = "") {
  std::string text;
  for (int i = 0; i < 80; ++i)
    text += (i == 0 && !first.empty() ? first : prefix + std::to_string(i)) + "\n";
  return text;
}

void write_text(const fs::path& p, const std::string& text) {
  write_bytes(p, text.data(), text.size());
}

}  // namespace

// Both system-wide lists give COCO 2017's 80 names in the same order once
// darknet's VOC spellings are renamed.
TEST(Labels, CocoSystemListsAgree) {
  const auto tv = coco_labels_from_torchvision(kTorchvisionMetaPath);
  const auto dn = coco_labels_from_darknet(kDarknetCocoNamesPath);
  ASSERT_EQ(tv.size(), 80u);
  EXPECT_EQ(tv, dn);
  EXPECT_EQ(tv[0], "person");
  EXPECT_EQ(tv[3], "motorcycle");
  EXPECT_EQ(tv[62], "tv");
  EXPECT_EQ(coco_labels(), tv);
}

// The model's own files come first, in the order given, then torchvision's
// list, then darknet's; each source is a file made here.
TEST(Labels, CocoLookupOrder) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  CocoLabelSources s;
  s.model_files = {(dir / "det.labels").string(), (dir / "coco.names").string()};
  s.torchvision_meta = (dir / "meta.py").string();
  s.darknet_names = (dir / "darknet.names").string();
  write_text(dir / "det.labels", coco_like_names("own"));
  write_text(dir / "coco.names", coco_like_names("beside"));
  std::string py = "_COCO_CATEGORIES = [\"__background__\", \"N/A\"";
  for (int i = 0; i < 80; ++i) py += ", \"tv" + std::to_string(i) + "\"";
  write_text(dir / "meta.py", py + "]\n");
  write_text(dir / "darknet.names", coco_like_names("dn", "motorbike"));

  EXPECT_EQ(coco_labels(s), load_labels(s.model_files[0]));
  fs::remove(dir / "det.labels");
  EXPECT_EQ(coco_labels(s), load_labels(s.model_files[1]));
  fs::remove(dir / "coco.names");
  EXPECT_EQ(coco_labels(s)[0], "tv0");
  fs::remove(dir / "meta.py");
  const auto dn = coco_labels(s);
  EXPECT_EQ(dn[0], "motorcycle");  // darknet's VOC spelling renamed
  EXPECT_EQ(dn[79], "dn79");
  fs::remove(dir / "darknet.names");
  const std::string none = error_of([&] { coco_labels(s); });
  EXPECT_NE(none.find("no COCO class names found"), std::string::npos) << none;
  for (const std::string& place :
       {s.model_files[0], s.model_files[1], s.torchvision_meta, s.darknet_names})
    EXPECT_NE(none.find(place), std::string::npos) << place << " not named in: " << none;
}

// A model's own list that exists but is not 80 names is an error naming it,
// not a reason to fall back to another list.
TEST(Labels, CocoBrokenModelFileIsAnError) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  write_text(dir / "det.labels", "person\nbicycle\n");
  write_text(dir / "coco.names", coco_like_names("beside"));
  CocoLabelSources s;
  s.model_files = {(dir / "det.labels").string(), (dir / "coco.names").string()};
  const std::string e = error_of([&] { coco_labels(s); });
  EXPECT_NE(e.find(s.model_files[0]), std::string::npos) << e;
  EXPECT_NE(e.find("has 2 names"), std::string::npos) << e;
}
