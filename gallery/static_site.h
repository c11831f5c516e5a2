#pragma once
// `tandem gallery CATALOG OUT/`: the served page as files that open from
// disk with no server, for sharing a trip: the page's assets, the catalog's
// answers as one script (a page opened from disk may not fetch files beside
// it, but it may load a script), and each photo's two thumbnails.
#include <cstdint>
#include <string>

namespace tandem::gallery {

struct StaticOptions {
  std::string catalog;
  std::string model;           // empty: the model with the most files
  std::string out;             // the folder to write (created; files in it replaced)
  std::string thumbnail_root;  // the freedesktop cache; empty: the default
};

struct StaticResult {
  int64_t photos = 0;
  int64_t without_thumbnail = 0;  // missing, outside the roots, or not decodable
};

StaticResult write_static_gallery(const StaticOptions& o);

}  // namespace tandem::gallery
