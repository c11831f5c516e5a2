#include "image/labels.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace tandem::image {

namespace {

constexpr size_t kImagenetClasses = 1000;
constexpr size_t kCocoClasses = 80;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open label file", ErrorContext{path, {}, {}, {}});
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos)
    lines.pop_back();
  return lines;
}

// A Python string literal starting at text[i] (a quote); advances i past it.
// Handles the escapes a list of names can hold; no prefixes, no triple quotes.
std::string parse_py_string(const std::string& text, size_t& i, const std::string& path) {
  const char quote = text[i++];
  std::string s;
  while (i < text.size() && text[i] != quote) {
    char c = text[i++];
    if (c == '\n') break;
    if (c == '\\' && i < text.size()) {
      char e = text[i++];
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    s += c;
  }
  check(i < text.size() && text[i] == quote, "unterminated string in a Python list",
        ErrorContext{path, {}, {}, {}});
  ++i;
  return s;
}

// The names of the Python list literal `list = ["a", 'b', ...]` in `path`.
std::vector<std::string> py_string_list(const std::string& path, const std::string& list) {
  const ErrorContext ctx{path, {}, {}, {}};
  const std::string text = read_text(path);
  size_t i = text.find(list + " = [");
  check(i != std::string::npos, "no " + list + " list", ctx);
  i = text.find('[', i) + 1;
  std::vector<std::string> names;
  while (true) {
    while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == ','))
      ++i;
    check(i < text.size(), list + " list is not closed", ctx);
    if (text[i] == ']') break;
    if (text[i] == '#') {  // comment to end of line
      i = text.find('\n', i);
      continue;
    }
    check(text[i] == '"' || text[i] == '\'',
          "unexpected character '" + std::string(1, text[i]) + "' in " + list, ctx);
    names.push_back(parse_py_string(text, i, path));
  }
  return names;
}

}  // namespace

std::vector<std::string> imagenet_labels_from_torchvision(const std::string& meta_py) {
  std::vector<std::string> names = py_string_list(meta_py, "_IMAGENET_CATEGORIES");
  check(names.size() == kImagenetClasses,
        "_IMAGENET_CATEGORIES has " + std::to_string(names.size()) + " names, expected 1000",
        ErrorContext{meta_py, {}, {}, {}});
  return names;
}

std::vector<std::string> coco_labels_from_torchvision(const std::string& meta_py) {
  std::vector<std::string> names;
  for (std::string& n : py_string_list(meta_py, "_COCO_CATEGORIES"))
    if (n != "__background__" && n != "N/A") names.push_back(std::move(n));
  check(names.size() == kCocoClasses,
        "_COCO_CATEGORIES has " + std::to_string(names.size()) + " object names, expected 80",
        ErrorContext{meta_py, {}, {}, {}});
  return names;
}

std::vector<std::string> coco_labels_from_darknet(const std::string& coco_names) {
  std::vector<std::string> names = split_lines(read_text(coco_names));
  check(names.size() == kCocoClasses, "has " + std::to_string(names.size()) + " names, expected 80",
        ErrorContext{coco_names, {}, {}, {}});
  // darknet keeps the VOC spellings of six classes; use COCO's.
  static const std::pair<const char*, const char*> kRenames[] = {
      {"motorbike", "motorcycle"}, {"aeroplane", "airplane"},   {"sofa", "couch"},
      {"pottedplant", "potted plant"}, {"diningtable", "dining table"}, {"tvmonitor", "tv"}};
  for (std::string& n : names)
    for (auto [from, to] : kRenames)
      if (n == from) n = to;
  return names;
}

std::vector<std::string> coco_labels_from_file(const std::string& path) {
  std::vector<std::string> names = load_labels(path);
  check(names.size() == kCocoClasses,
        "has " + std::to_string(names.size()) + " names, expected the 80 COCO classes",
        ErrorContext{path, {}, {}, {}});
  return names;
}

std::vector<std::string> coco_labels(const CocoLabelSources& sources) {
  std::string tried;
  for (const std::string& f : sources.model_files) {
    std::error_code ec;
    if (std::filesystem::exists(f, ec)) return coco_labels_from_file(f);
    tried += f + ": no such file; ";
  }
  try {
    return coco_labels_from_torchvision(sources.torchvision_meta);
  } catch (const Error& e) {
    tried += std::string("python3-torchvision's ") + e.what() + "; ";
  }
  try {
    return coco_labels_from_darknet(sources.darknet_names);
  } catch (const Error& e) {
    throw Error("no COCO class names found; tried " + tried + "darknet's " + e.what());
  }
}

std::vector<std::string> imagenet_labels_from_darknet(const std::string& shortnames,
                                                      const std::string& synsets) {
  const std::vector<std::string> names = split_lines(read_text(shortnames));
  const std::vector<std::string> ids = split_lines(read_text(synsets));
  check(names.size() >= kImagenetClasses, "fewer than 1000 names", ErrorContext{shortnames, {}, {}, {}});
  check(ids.size() >= kImagenetClasses, "fewer than 1000 synsets", ErrorContext{synsets, {}, {}, {}});
  std::vector<std::pair<std::string, std::string>> classes;  // (synset, name)
  for (size_t k = 0; k < kImagenetClasses; ++k) {
    check(ids[k].size() == 9 && ids[k][0] == 'n', "line " + std::to_string(k + 1) +
                                                     " is not a WordNet synset id: " + ids[k],
          ErrorContext{synsets, {}, {}, {}});
    classes.emplace_back(ids[k], names[k]);
  }
  std::sort(classes.begin(), classes.end());
  std::vector<std::string> out;
  out.reserve(kImagenetClasses);
  for (auto& [id, name] : classes) {
    // The two names ImageNet-1k uses twice, disambiguated as torchvision does.
    if (id == "n02012849") name = "crane bird";         // vs n03126707 crane (machine)
    if (id == "n03710721") name = "maillot tank suit";  // vs n03710637 maillot
    out.push_back(std::move(name));
  }
  return out;
}

std::vector<std::string> imagenet_labels() {
  std::string why;
  // A copy of torchvision's _meta.py elsewhere (a machine whose torchvision
  // is not Debian's): TANDEM_TORCHVISION_META names it.
  const char* meta = std::getenv("TANDEM_TORCHVISION_META");
  try {
    return imagenet_labels_from_torchvision(meta && *meta ? meta : kTorchvisionMetaPath);
  } catch (const Error& e) {
    why = e.what();
  }
  try {
    return imagenet_labels_from_darknet(kDarknetShortnamesPath, kDarknetSynsetsPath);
  } catch (const Error& e) {
    throw Error("no ImageNet class names found (install python3-torchvision or darknet): " + why +
                "; " + e.what());
  }
}

std::vector<std::string> load_labels(const std::string& path) {
  std::vector<std::string> labels = split_lines(read_text(path));
  check(!labels.empty(), "label file has no labels", ErrorContext{path, {}, {}, {}});
  return labels;
}

}  // namespace tandem::image
