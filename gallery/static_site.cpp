#include "gallery/static_site.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "gallery/catalog_view.h"
#include "gallery/photo_files.h"
#include "gallery/web_assets.h"
#include "pipeline/catalog.h"

namespace tandem::gallery {

using nlohmann::json;

namespace {

void write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), std::streamsize(size));
  f.close();
  check(f.good(), "cannot write " + path.string());
}

// Every photo of the model, in the gallery's order, each as /api/photo/ID
// answers it.
json all_photos(CatalogView& v) {
  json photos = json::array();
  PhotoQuery q;
  q.limit = kMaxPageSize;
  for (;;) {
    json page = v.photos(q);
    for (const json& p : page["photos"]) photos.push_back(v.photo(p["id"].get<int64_t>()));
    if (page["next"].is_null()) break;
    q.after = decode_cursor(page["next"].get<std::string>());
  }
  return photos;
}

}  // namespace

StaticResult write_static_gallery(const StaticOptions& o) {
  namespace fs = std::filesystem;
  { pipeline::Catalog migrate(o.catalog); }  // an older catalog is brought up to date first
  CatalogView v(o.catalog, o.model);
  std::error_code ec;
  fs::create_directories(fs::path(o.out) / "thumbs", ec);
  check(!ec, "cannot create " + o.out + "/thumbs: " + ec.message());
  for (const WebAsset& a : web_assets()) write_file(fs::path(o.out) / a.name, a.data, a.size);

  json summary = v.summary();
  summary["edits"] = false;
  summary["static"] = true;
  json photos = all_photos(v);
  PhotoFiles files(v.roots(), o.catalog, o.thumbnail_root);
  StaticResult r;
  for (json& p : photos) {
    ++r.photos;
    std::optional<PhotoFile> f = v.photo_file(p["id"].get<int64_t>());
    std::string real;
    bool made = false;
    if (f && files.check(*f, &real) == FileAccess::ok) {
      try {
        for (bool large : {false, true}) {
          std::vector<uint8_t> png = files.thumbnail(*f, real, large);
          write_file(fs::path(o.out) / "thumbs" / (std::to_string(f->id) + (large ? "-large.png" : "-normal.png")),
                     png.data(), png.size());
        }
        made = true;
      } catch (const Error&) {
        // Not decodable: the page shows the photo without a picture.
      }
    }
    p["thumbnail"] = made;
    if (!made) ++r.without_thumbnail;
  }
  const std::string data =
      "window.TANDEM_DATA = " +
      json_text(json{{"summary", std::move(summary)}, {"people", v.people()["people"]}, {"photos", std::move(photos)}}) +
      ";\n";
  write_file(fs::path(o.out) / "data.js", data.data(), data.size());
  return r;
}

}  // namespace tandem::gallery
