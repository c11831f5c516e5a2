// `tandem gallery CATALOG OUT/`: the gallery as static files that open
// from disk (gallery/static_site.h).
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "gallery/static_site.h"

namespace tandem::cli {

void add_gallery_command(CLI::App& app) {
  auto o = std::make_shared<gallery::StaticOptions>();
  CLI::App* sub = app.add_subcommand("gallery", "Write the gallery as static files to open from disk or share");
  sub->add_option("catalog", o->catalog, "The catalog tag --catalog wrote: a SQLite file or a postgresql:// URL")
      ->required()
      ->check(existing_catalog());
  sub->add_option("out", o->out, "The folder to write (index.html, data.js, thumbs/)")->required();
  sub->add_option("--model", o->model, "The model whose results to show (default: the one with the most files)");
  on_run(sub, [o] {
    gallery::StaticResult r = gallery::write_static_gallery(*o);
    fmt::print("tandem: {} photos in {}/index.html{}\n", r.photos, o->out,
               r.without_thumbnail ? fmt::format(" ({} without a thumbnail: missing or not decodable)",
                                                 r.without_thumbnail)
                                   : "");
    return 0;
  });
}

}  // namespace tandem::cli
