// A catalog file that is not what it should be (a corrupt SQLite file, an
// older or newer tandem's, another program's database): opened as the
// gallery opens it (read-only, every page of answers) and as `tag` opens it
// (read-write, migrating an older schema).
#include <filesystem>

#include "fuzz/fuzz_util.h"
#include "gallery/catalog_view.h"
#include "gallery/photo_query.h"
#include "pipeline/catalog.h"

using namespace tandem;

namespace {

std::string fresh_catalog_file(std::span<const uint8_t> bytes) {
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    std::filesystem::remove(fuzz::scratch_dir() / (std::string("catalog.sqlite") + suffix));
  return fuzz::write_scratch("catalog.sqlite", bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fresh_catalog_file({data, size});
  fuzz::rejecting_bad_input([&] {
    gallery::CatalogView view(path, "");
    view.summary();
    view.photos(gallery::PhotoQuery{});
    view.people();
    view.duplicates(std::nullopt, 10);
    view.photo(1);
  });
  path = fresh_catalog_file({data, size});
  fuzz::rejecting_bad_input([&] {
    pipeline::Catalog catalog(path);
    catalog.up_to_date("/photos/a.jpg", 1, 1, "centernet");
  });
  return 0;
}
