#pragma once
// The gallery's reading of a catalog: the answers of the JSON API
// (docs/GALLERY.md) as nlohmann::json, through one connection that only
// reads: a SQLite file opened read-only, or a PostgreSQL catalog. Each
// answer reads one snapshot (one read transaction), so a `tag` writing
// meanwhile is seen batch by batch and is never blocked (SQLite's WAL,
// PostgreSQL's MVCC).
// Not thread-safe: the server gives each of its threads a view of its own.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "gallery/photo_query.h"
#include "gallery/photo_sql.h"

namespace tandem::pipeline::sql {
class Database;
}

namespace tandem::gallery {

// Where a photo's bytes are, for the file routes: what the catalog says it
// was when tagged, to tell a file that changed since.
struct PhotoFile {
  int64_t id = 0;
  std::string path;
  int64_t size = 0, mtime_ns = 0;
  int width = 0, height = 0;
};

class CatalogView {
 public:
  // `model`: the model whose files are the gallery's photos; empty: the one
  // with the most files. Throws Error when the file is not a catalog of
  // the schema this tandem writes (the server migrates it first).
  CatalogView(const std::string& catalog, const std::string& model);
  ~CatalogView();
  CatalogView(const CatalogView&) = delete;
  CatalogView& operator=(const CatalogView&) = delete;

  const std::string& model() const { return model_; }

  // How pages are read (gallery/photo_sql.h): chosen per query, or (for
  // tests, which must see both give the same pages) always one way where
  // a filter can drive.
  enum class Plan { choose, walk, drive, dated_filter };
  void set_plan(Plan p) { plan_ = p; }
  // The filters' counts run, not taken from the plan statistics kept
  // (counts_), and how long those outlive another connection's commit.
  int64_t counts_run() const { return counts_run_; }
  void keep_counts_after_change(std::chrono::milliseconds d) { counts_kept_after_change_ = d; }

  // A number that changes whenever another connection commits (SQLite's
  // data_version; PostgreSQL's snapshot): what a cache of summary() is
  // keyed by.
  int64_t data_version();

  nlohmann::json summary();
  nlohmann::json photos(const PhotoQuery& q);
  // Null when the catalog has no such photo of the model.
  nlohmann::json photo(int64_t id);
  nlohmann::json people();
  nlohmann::json duplicates(const std::optional<std::string>& after_hash, int limit);

  std::optional<PhotoFile> photo_file(int64_t id);
  // The folders `tag` was given (absolute), where served files must lie.
  std::vector<std::string> roots();

 private:
  class ReadTransaction;
  struct Key {
    int64_t id;
    std::string taken_at;  // empty: undated
  };
  // How a page is read (gallery/photo_sql.h): clause -1 walks the date
  // index; else that clause drives, or walks its own dated index.
  struct Route {
    int clause = -1;
    bool dated_filter = false;
  };
  // The ids of up to `limit` photos of one phase (dated or not) after the
  // query's cursor.
  std::vector<Key> page_keys(const PhotoQuery& q, const std::vector<FilterClause>& clauses,
                             Route route, bool dated, int limit);
  std::vector<Key> dated_filter_keys(const PhotoQuery& q, const std::vector<FilterClause>& clauses,
                                     int clause, bool dated, int limit);
  Route choose_route(const std::vector<FilterClause>& clauses);
  // A filter's matches, counted up to where the choice stops
  // (drive_count_limit), or as counted before: see counts_.
  int64_t count_matches(const SqlPart& drive);
  std::vector<ResolvedWord> resolve(const std::vector<std::string>& words);
  nlohmann::json photo_row(int64_t id);
  // What paging needs of the whole catalog, read again when another
  // connection committed: a bound of the library's size and every label.
  void refresh();

  std::unique_ptr<pipeline::sql::Database> db_;
  std::string model_;
  Plan plan_ = Plan::choose;
  int64_t seen_version_ = -1;
  int64_t photos_bound_ = 0;  // at least the model's photos (refresh)
  std::vector<std::string> labels_;
  // A search word's people (every name read: 0.4 ms at 2,000 people),
  // until another connection commits.
  std::unordered_map<std::string, std::vector<int64_t>> people_by_word_;
  // Counts are statistics for choosing a plan, never part of an answer:
  // any plan reads the same photos. Kept by the count's SQL and values,
  // they let the pages after a filter's first (scrolling) and other
  // clients asking the same filter skip counting (a busy tag, camera or
  // place: 0.5-1.3 ms each at a million photos, most of such a page).
  // Once another connection commits they are kept at most
  // counts_kept_after_change_ (5 s) longer: a running `tag` then costs one count
  // per filter per interval, and a plan is at worst that stale.
  std::unordered_map<std::string, int64_t> counts_;
  std::chrono::steady_clock::time_point counts_since_{};
  bool changed_since_counts_ = false;
  std::chrono::milliseconds counts_kept_after_change_{5000};
  int64_t counts_run_ = 0;
};

// `j` as JSON text; bytes that are not UTF-8 (a file name from an old
// camera's card) become U+FFFD instead of failing the answer.
inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Whether the file at `path` is still the one tagged (same size and
// modification time); false when it is gone.
bool unchanged_since_tagged(const std::string& path, int64_t size, int64_t mtime_ns);

}  // namespace tandem::gallery
