#pragma once
// How a page of photos is read at a million photos: the SQL of each filter
// in two forms, and the choice between them.
//
//  * walk: read photos newest first along an index (date taken; a
//    camera's (make, model, date) when both are asked) and test each
//    filter per row until the page is full. Cheap when the filters match
//    many photos: a page needs few rows read.
//  * drive: read the few photos one filter matches from its own index (a
//    tag's, a person's, the place index, the file-name trigram index) and
//    sort them. Cheap when it matches few: a walk would read most of the
//    library to fill a page.
//  * dated filter walk: read a tag's or a person's own photos newest first
//    along its (label or person, date) index and test the other filters
//    per row. A page reads about 60 / (the share of that filter's photos
//    the others admit) rows, never sorts, and needs no count when that
//    filter is the only one with an index: what a tag or a person uses
//    whenever the catalog has those indexes, unless another filter matches
//    few enough photos to drive. A search word naming few labels and
//    people walks each one's index and its file names' matches (sorted:
//    only while they are few), and merges them.
//
// The choice counts each filter's matches (capped; kept for the filter's
// next pages, CatalogView) and drives by the smallest when count^2 <= 64 x
// the library (reading c rows and sorting them against walking about 60 x
// library / c rows). SQLite is not left to choose: Debian's build has no
// STAT4 histograms, so it takes every label for an average one, and it
// chose to sort the whole library for a common tag (5 s at a million
// photos, bench/gallery_scale.py). CROSS JOIN and INDEXED BY pin the plan. Every filter's row test is applied in both
// forms, so the two give the same photos. On PostgreSQL, whose planner
// keeps statistics per value, the same two forms are sent without the
// pins, and a search word never drives (its catalog has no file-name
// trigram index).
#include <cstdint>
#include <string>
#include <vector>

#include "gallery/photo_query.h"
#include "pipeline/sql.h"

namespace tandem::gallery {

// A value bound to a '?' (no request text ever enters the SQL).
struct SqlValue {
  bool is_text = true;
  std::string text;
  double number = 0;
};

struct SqlPart {
  std::string sql;
  std::vector<SqlValue> values;
  void add(const std::string& more, std::vector<SqlValue> v = {});
};

// Where a row test names its photo's id (test_on puts a column there).
constexpr const char* kRowId = "{id}";

// Rows `w` (file_id, taken_at) a filter's photos are read from newest
// first: an index in date order (a tag's, a person's) or a query whose
// few rows are sorted (a search word's file names).
struct DatedSource {
  SqlPart from;           // "tags w INDEXED BY tags_by_label_date"
  SqlPart where;          // " AND w.label = ?"
  bool superset = false;  // rows the filter's own test must narrow
};

// One filter: its row test over `files f` and `photo_meta m` (" AND ..."),
// and, when it has an index of its own, the query of the file ids it
// matches (empty when it cannot drive). A tag and a person have an index
// in date order too (SQLite's catalog, schema version 7): its rows as `w`
// (file_id, taken_at) and their condition, read newest first like a walk
// but over that filter's photos alone. A search word has one such source
// per label and person it names, and its file names: their union, newest
// first.
struct FilterClause {
  SqlPart test;
  // The test with the photo's id read from `id`: the id column of the
  // table a query reads first, so that SQLite tests each row before it
  // joins the row to files (a tag and a person together: 0.5 ms a page
  // against 1.5 at a million photos).
  SqlPart test_on(const std::string& id) const;
  bool reads_meta = false;  // the test reads photo_meta m
  bool date_range = false;  // the test is a date range and nothing else
  SqlPart drive;
  std::vector<DatedSource> dated;  // empty: none
  // The ids a dated source sorts (a word's file names): counted first,
  // the sources serve only while they are few enough to sort.
  SqlPart dated_bound;
  // A camera (make and model): the date walk itself reads its index.
  bool camera_walk = false;
};

// A search word as the catalog knows it: the labels it starts (ASCII case
// folded, as LIKE) and the people whose name has a word it starts.
struct ResolvedWord {
  std::string word;
  std::vector<std::string> labels;
  std::vector<int64_t> people;
};

// What the gallery's SQL says differently to each database.
struct DialectSql {
  // LIKE folding ASCII letters' case: SQLite's LIKE, PostgreSQL's ILIKE
  // (in a C-locale database, ASCII only as well).
  const char* like = " LIKE ";
  // A join kept in the order written: SQLite's CROSS JOIN; a plain JOIN
  // for PostgreSQL, which reorders with the statistics it has.
  const char* cross_join = " CROSS JOIN ";
  bool index_hints = true;    // SQLite's INDEXED BY
  bool path_index = true;     // the file_paths trigram table (SQLite's FTS5)
  bool dated_filters = true;  // tags' and faces' own date indexes
  std::string hint(const char* index) const { return index_hints ? std::string(" INDEXED BY ") + index : ""; }
};
const DialectSql& sql_for(pipeline::sql::Dialect d);

// The filter's date range as a test of `column` (" AND column >= ? AND
// column < ?", the bounds given); empty without one.
SqlPart date_range(const PhotoFilter& f, const std::string& column);

std::vector<FilterClause> filter_clauses(const PhotoFilter& f, const std::vector<ResolvedWord>& words,
                                         const DialectSql& d);

// Whether driving by a filter matching `matches` photos beats walking a
// library of `photos`.
bool should_drive(int64_t matches, int64_t photos);

// The most sources a search word is read from in date order (labels and
// people it names, and its file names); past that it walks. Each source
// reads up to a page of rows: a word naming ten people ("anna") costs as
// much that way as the walk (2.4 ms at a million photos), where a label
// and the file names ("dog") take a third of the walk's time.
constexpr size_t kMaxDatedSources = 4;

// The most a filter's matches are counted to (more: it walks).
constexpr int64_t kDriveCountCap = 20000;

// How far to count a filter's matches in a library of `photos`: one past
// the most should_drive admits (8,000 at a million photos). Counting further
// decides nothing, and a count reads an index entry per match.
int64_t drive_count_limit(int64_t photos);

}  // namespace tandem::gallery
