#include "gallery/photo_files.h"

#include <climits>
#include <cstdlib>

#include "core/error.h"
#include "image/decode.h"

namespace tandem::gallery {

namespace {

// The path with every symlink resolved; empty when it does not exist.
std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

bool within(const std::string& path, const std::string& root) {
  if (root.empty()) return false;
  if (path == root) return true;
  const std::string prefix = root.back() == '/' ? root : root + "/";
  return path.compare(0, prefix.size(), prefix) == 0;
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

PhotoFiles::PhotoFiles(const std::vector<std::string>& roots, const std::string& catalog,
                       const std::string& thumbnail_root)
    : store_(thumbnail_root.empty() ? pipeline::default_thumbnail_root() : thumbnail_root,
             pipeline::catalog_thumbnail_folder(catalog)) {
  set_roots(roots);
}

void PhotoFiles::set_roots(const std::vector<std::string>& roots) {
  std::vector<std::string> real;
  for (const std::string& r : roots)
    if (std::string p = real_path(r); !p.empty()) real.push_back(p);
  std::lock_guard lock(mu_);
  roots_ = std::move(real);
}

FileAccess PhotoFiles::check(const PhotoFile& f, std::string* real) const {
  if (!unchanged_since_tagged(f.path, f.size, f.mtime_ns)) return FileAccess::missing;
  const std::string p = real_path(f.path);
  if (p.empty()) return FileAccess::missing;
  std::lock_guard lock(mu_);
  bool ok = false;
  if (roots_.empty()) {
    ok = within(p, real_path(parent_of(f.path)));
  } else {
    for (const std::string& r : roots_) ok = ok || within(p, r);
  }
  if (!ok) return FileAccess::outside_roots;
  *real = p;
  return FileAccess::ok;
}

std::vector<uint8_t> PhotoFiles::thumbnail(const PhotoFile& f, const std::string& real, bool large) {
  if (auto png = store_.current(f.path, f.mtime_ns, large)) return std::move(*png);
  // No more pixels than the large thumbnail needs: a JPEG decodes at the DCT
  // scale that still gives them, an eighth of a 12-MP photo.
  image::Image img = image::decode_image_file(real, pipeline::kLargeThumbnailSide, pipeline::kLargeThumbnailSide);
  store_.write(f.path, f.mtime_ns, f.size, img);
  auto png = store_.current(f.path, f.mtime_ns, large);
  tandem::check(png.has_value(), "the thumbnail of " + f.path + " was written but cannot be read back");
  return std::move(*png);
}

}  // namespace tandem::gallery
