// `tandem catalog copy SRC DST`: a catalog moved between a SQLite file and
// a PostgreSQL database (either way), ids and all. `tandem status CATALOG`:
// how far a shared run (`tag --queue`) is, per worker.
#include <fmt/core.h>

#include "cli/commands.h"
#include "pipeline/catalog.h"
#include "pipeline/catalog_copy.h"
#include "pipeline/work_queue.h"

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

struct StatusOptions {
  std::string catalog;
  double stale_s = 180;  // a worker silent this long while holding files is flagged
};

int status_command(const StatusOptions& o) {
  { pipeline::Catalog check(o.catalog); }  // a catalog, migrated: the queue's tables are there
  const std::vector<pipeline::QueueStatus> all = pipeline::queue_status(o.catalog);
  if (all.empty()) fmt::print("no queued work (tag --queue fills the queue)\n");
  for (const pipeline::QueueStatus& q : all) {
    const auto& c = q.counts;
    const int64_t open = c.total - c.done;
    fmt::print("{}: {} of {} files done ({:.1f}%), {} claimed under live leases, {} waiting{}\n", q.model_id, c.done,
               c.total, c.total ? 100.0 * double(c.done) / double(c.total) : 100.0, c.leased,
               open - c.leased, c.expired ? fmt::format(", {} under expired leases (a worker died; others take them)", c.expired) : "");
    for (const pipeline::WorkerStatus& w : q.workers) {
      const double rate = w.seconds > 0 ? double(w.files) / w.seconds : 0;
      const bool silent = w.idle_s > o.stale_s;
      fmt::print("  {:<40} {:>8} files  {:>7.1f} img/s  holds {:>5}  last seen {:.0f} s ago{}\n", w.id, w.files, rate,
                 w.leased, w.idle_s, silent && w.leased > 0 ? "  STUCK: its leases run out unrenewed" : "");
    }
  }
  return 0;
}

}  // namespace

void add_status_command(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* sub = app.add_subcommand("status", "Progress of a shared run (tag --queue): files done, workers, stuck leases");
  sub->add_option("catalog", o->catalog, "The catalog: FILE.sqlite or postgresql://...")->required();
  sub->add_option("--stale", o->stale_s, "Flag workers silent this many seconds while holding files (default 180)")
      ->check(CLI::NonNegativeNumber);
  on_run(sub, [o] { return status_command(*o); });
}

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
