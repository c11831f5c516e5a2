#pragma once
// The gallery's reading of a catalog: the answers of the JSON API
// (docs/GALLERY.md) as nlohmann::json, through one connection that only
// reads: a SQLite file opened read-only, or a PostgreSQL catalog. Each
// answer reads one snapshot (one read transaction), so a `tag` writing
// meanwhile is seen batch by batch and is never blocked (SQLite's WAL,
// PostgreSQL's MVCC).
// Not thread-safe: the server gives each of its threads a view of its own.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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
