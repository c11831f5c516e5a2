#pragma once
// The files behind the gallery's photos: whether a photo may be served (it
// is still the file that was tagged, and its real path, symlinks resolved,
// lies within a folder `tag` was given) and its thumbnails, found in the
// freedesktop cache or the catalog's own folder, or made now from the photo
// and kept there for the next time.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gallery/catalog_view.h"
#include "pipeline/thumbnails.h"

namespace tandem::gallery {

enum class FileAccess { ok, missing, outside_roots };

class PhotoFiles {
 public:
  // `roots`: the catalog's (absolute); none (a catalog from before tandem
  // kept them) makes each file's own folder its root. Thumbnails: the
  // freedesktop cache under `thumbnail_root` (empty: the default one), else
  // the folder beside `catalog` that `tag` falls back to.
  PhotoFiles(const std::vector<std::string>& roots, const std::string& catalog, const std::string& thumbnail_root);

  // Replaces the roots (`tag` may add folders while the server runs).
  void set_roots(const std::vector<std::string>& roots);

  // Whether `f` may be served; its real path in `*real` when it may.
  FileAccess check(const PhotoFile& f, std::string* real) const;

  // The thumbnail's PNG (`large`: 256 pixels, else 128), current or made
  // from the file at `real` now; throws Error when the photo does not
  // decode or no folder takes the thumbnail.
  std::vector<uint8_t> thumbnail(const PhotoFile& f, const std::string& real, bool large);

 private:
  mutable std::mutex mu_;
  std::vector<std::string> roots_;  // real paths
  pipeline::ThumbnailStore store_;
};

}  // namespace tandem::gallery
