// `tandem catalog copy SRC DST`: a catalog moved between a SQLite file and
// a PostgreSQL database (either way), ids and all.
#include <fmt/core.h>

#include "cli/commands.h"
#include "pipeline/catalog_copy.h"

namespace tandem::cli {

namespace {

struct CopyOptions {
  std::string src, dst;
};

int copy_command(const CopyOptions& o) {
  const pipeline::CopyCounts c = pipeline::copy_catalog(o.src, o.dst);
  fmt::print("copied {} files ({} tags, {} objects, {} with camera metadata), {} faces of {} people, {} roots\n",
             c.files, c.tags, c.objects, c.metadata, c.faces, c.people, c.roots);
  return 0;
}

}  // namespace

void add_catalog_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("catalog", "Work with a catalog as a whole (SQLite file or postgresql:// URL)");
  sub->require_subcommand(1);
  auto o = std::make_shared<CopyOptions>();
  CLI::App* copy = sub->add_subcommand(
      "copy", "Copy a whole catalog into a new one: SQLite file to PostgreSQL database or back (ids kept)");
  copy->add_option("source", o->src, "The catalog to copy: FILE.sqlite or postgresql://...")->required();
  copy->add_option("destination", o->dst, "A new or empty catalog: FILE.sqlite or postgresql://...")->required();
  on_run(copy, [o] { return copy_command(*o); });
}

}  // namespace tandem::cli
