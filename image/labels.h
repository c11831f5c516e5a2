#pragma once
// Class names for classifier outputs.
#include <string>
#include <vector>

namespace tandem::image {

// Where Debian puts ImageNet-1k class names.
inline constexpr const char* kTorchvisionMetaPath =
    "/usr/lib/python3/dist-packages/torchvision/models/_meta.py";  // python3-torchvision
inline constexpr const char* kDarknetShortnamesPath =
    "/usr/share/darknet/data/imagenet.shortnames.list";  // darknet
inline constexpr const char* kDarknetSynsetsPath = "/usr/share/darknet/data/imagenet.labels.list";
inline constexpr const char* kDarknetCocoNamesPath = "/usr/share/darknet/data/coco.names";

// The 1000 ImageNet-1k names in model output order (index 0 "tench").
// Tries torchvision's list, then darknet's; throws tandem::Error naming both
// paths and packages when neither is readable.
std::vector<std::string> imagenet_labels();

// Parses torchvision's `_IMAGENET_CATEGORIES = ["tench", ...]` Python list
// literal out of `meta_py`. Throws tandem::Error unless it finds 1000 names.
std::vector<std::string> imagenet_labels_from_torchvision(const std::string& meta_py);

// darknet lists ImageNet-22k synsets with the 1k ones first; sorting those
// 1000 by synset id gives the order the torchvision-trained models use.
// torchvision renames two duplicated names (crane, maillot); the same renames
// are applied here so both sources agree.
std::vector<std::string> imagenet_labels_from_darknet(const std::string& shortnames,
                                                      const std::string& synsets);

// Where the COCO class names are looked for, in this order: the files that
// came with a model, then the system-wide lists.
struct CocoLabelSources {
  std::vector<std::string> model_files;  // one name per line
  std::string torchvision_meta = kTorchvisionMetaPath;
  std::string darknet_names = kDarknetCocoNamesPath;
};

// The 80 COCO object class names in detector output order (0 "person"),
// spelled as COCO 2017 does. Tries the files of `model_files` in order, then
// torchvision's _COCO_CATEGORIES (dropping "__background__" and the "N/A"
// gaps of the 91 ids), then darknet's coco.names (whose six VOC spellings,
// "motorbike" ..., are renamed). A model file that is missing is passed
// over; one that exists must hold 80 names (it is the model's own list, so a
// broken one is an error rather than silently replaced). Throws
// tandem::Error naming every place tried.
std::vector<std::string> coco_labels(const CocoLabelSources& sources = {});
// One name per line; throws tandem::Error naming `path` unless it has 80.
std::vector<std::string> coco_labels_from_file(const std::string& path);
std::vector<std::string> coco_labels_from_torchvision(const std::string& meta_py);
std::vector<std::string> coco_labels_from_darknet(const std::string& coco_names);

// One label per line (trailing "\r" dropped, trailing blank lines ignored).
// Throws tandem::Error naming the file if it cannot be read or has none.
std::vector<std::string> load_labels(const std::string& path);

}  // namespace tandem::image
