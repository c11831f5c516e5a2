#include "gallery/catalog_view.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/catalog_postgres.h"
#include "pipeline/sql.h"

namespace tandem::gallery {

using nlohmann::json;
using pipeline::sql::Database;
using pipeline::sql::Dialect;
using pipeline::sql::Statement;

namespace {

// How many plan counts and search words' people are kept
// (CatalogView::counts_, people_by_word_): a bound on memory against a
// client asking ever new filters.
constexpr size_t kCountsKept = 4096;
constexpr size_t kWordsKept = 4096;

// The columns of a photo in a list, in the order photo_json reads them.
constexpr const char* kPhotoColumns =
    "f.id, f.path, f.width, f.height, m.taken_at, f.status, f.size, f.mtime_ns, "
    "(SELECT count(*) FROM files g WHERE g.content_hash = f.content_hash AND g.model_id = f.model_id)";

json text_or_null(const Statement& s, int column) { return s.is_null(column) ? json(nullptr) : json(s.text(column)); }
json real_or_null(const Statement& s, int column) { return s.is_null(column) ? json(nullptr) : json(s.real(column)); }

std::string file_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

json photo_json(const Statement& s) {
  const std::string path = s.text(1);
  return json{{"id", s.int64(0)},
              {"name", file_name(path)},
              {"path", path},
              {"width", s.int64(2)},
              {"height", s.int64(3)},
              {"taken_at", text_or_null(s, 4)},
              {"status", s.text(5)},
              {"missing", !unchanged_since_tagged(path, s.int64(6), s.int64(7))},
              {"copies", s.int64(8)}};
}

json box_json(const Statement& s, int first) {
  return json::array({s.real(first), s.real(first + 1), s.real(first + 2), s.real(first + 3)});
}

}  // namespace

bool unchanged_since_tagged(const std::string& path, int64_t size, int64_t mtime_ns) {
  const std::optional<pipeline::FileStamp> now = pipeline::file_stamp_if_any(path);
  return now && now->size == size && now->mtime_ns == mtime_ns;
}

// One snapshot for everything an answer reads; ended (never committed
// anything) when it goes out of scope, on an Error too.
class CatalogView::ReadTransaction {
 public:
  explicit ReadTransaction(Database& db) : db_(db) { db_.begin_read("begin reading"); }
  ~ReadTransaction() { db_.rollback_if_open(); }

 private:
  Database& db_;
};

namespace {

int64_t schema_version(Database& db) {
  if (db.dialect() == Dialect::sqlite) return db.query_int("PRAGMA user_version", "read schema version");
  return db.query_int("SELECT value FROM tandem_meta WHERE key = 'schema_version'", "read schema version");
}

int64_t schema_version_written(Dialect d) {
  return d == Dialect::sqlite ? pipeline::Catalog::kSchemaVersion : pipeline::kPostgresSchemaVersion;
}

}  // namespace

CatalogView::CatalogView(const std::string& catalog, const std::string& model)
    : db_(pipeline::sql::open_for_reading(catalog)), model_(model) {
  const int64_t version = schema_version(*db_);
  check(version == schema_version_written(db_->dialect()),
        "catalog schema version " + std::to_string(version) + ", this tandem reads version " +
            std::to_string(schema_version_written(db_->dialect())),
        ErrorContext{db_->name(), "", "", ""});
  if (model_.empty()) {
    Statement s(*db_, "SELECT model_id FROM files GROUP BY model_id ORDER BY count(*) DESC, model_id LIMIT 1",
                "pick the model");
    if (s.step()) model_ = s.text(0);
  }
}

CatalogView::~CatalogView() = default;

int64_t CatalogView::data_version() {
  if (db_->dialect() == Dialect::sqlite) return db_->query_int("PRAGMA data_version", "read data version");
  // The server's snapshot (xmin:xmax:transactions in progress) changes
  // whenever a transaction anywhere on it starts writing or ends: a
  // superset of the commits that matter here.
  Statement s(*db_, "SELECT pg_current_snapshot()::text", "read data version");
  return s.step() ? int64_t(std::hash<std::string>{}(s.text(0)) >> 1) : 0;
}

json CatalogView::summary() {
  ReadTransaction tx(*db_);
  json out{{"model", model_}, {"models", json::array()}, {"photos", 0}, {"failed", 0}};
  {
    Statement s(*db_, "SELECT DISTINCT model_id FROM files ORDER BY model_id", "list models");
    while (s.step()) out["models"].push_back(s.text(0));
  }
  const bool one_model = out["models"].size() <= 1;
  {
    Statement s(*db_, "SELECT status, count(*) FROM files WHERE model_id = ?1 GROUP BY status", "count photos");
    s.bind(1, model_);
    int64_t all = 0;
    while (s.step()) {
      all += s.int64(1);
      if (s.text(0) == "failed") out["failed"] = s.int64(1);
    }
    out["photos"] = all;
  }
  out["people"] = db_->query_int("SELECT count(*) FROM people WHERE faces > 0 OR name IS NOT NULL", "count people");
  {
    json months = json::array();
    // With one model in the catalog (the usual case) every row is the
    // model's: the counts read an index alone, not a files row per photo
    // (12.6 s against 0.2 s for the tags at a million photos).
    Statement s(*db_, one_model ? R"sql(
SELECT substr(m.taken_at, 1, 7) AS month, count(*) FROM photo_meta m
WHERE m.taken_at IS NOT NULL GROUP BY month ORDER BY month DESC
)sql" : R"sql(
SELECT substr(m.taken_at, 1, 7) AS month, count(*) FROM photo_meta m JOIN files f ON f.id = m.file_id
WHERE f.model_id = ?1 AND m.taken_at IS NOT NULL GROUP BY month ORDER BY month DESC
)sql", "count photos by month");
    if (!one_model) s.bind(1, model_);
    int64_t dated = 0;
    while (s.step()) months.push_back({{"month", s.text(0)}, {"count", s.int64(1)}}), dated += s.int64(1);
    out["months"] = std::move(months);
    out["undated"] = out["photos"].get<int64_t>() - dated;
  }
  {
    json tags = json::array();
    Statement s(*db_, one_model ? R"sql(
SELECT t.label, count(*) AS n FROM tags t GROUP BY t.label ORDER BY n DESC, t.label LIMIT 200
)sql" : R"sql(
SELECT t.label, count(*) AS n FROM tags t JOIN files f ON f.id = t.file_id WHERE f.model_id = ?1
GROUP BY t.label ORDER BY n DESC, t.label LIMIT 200
)sql", "count tags");
    if (!one_model) s.bind(1, model_);
    while (s.step()) tags.push_back({{"label", s.text(0)}, {"count", s.int64(1)}});
    out["tags"] = std::move(tags);
  }
  {
    json cameras = json::array();
    Statement s(*db_, one_model ? R"sql(
SELECT m.make, m.model, count(*) AS n FROM photo_meta m
WHERE m.make IS NOT NULL OR m.model IS NOT NULL
GROUP BY m.make, m.model ORDER BY n DESC LIMIT 100
)sql" : R"sql(
SELECT m.make, m.model, count(*) AS n FROM photo_meta m JOIN files f ON f.id = m.file_id
WHERE f.model_id = ?1 AND (m.make IS NOT NULL OR m.model IS NOT NULL)
GROUP BY m.make, m.model ORDER BY n DESC LIMIT 100
)sql", "count cameras");
    if (!one_model) s.bind(1, model_);
    while (s.step())
      cameras.push_back({{"make", s.is_null(0) ? "" : s.text(0)}, {"model", s.is_null(1) ? "" : s.text(1)}, {"count", s.int64(2)}});
    out["cameras"] = std::move(cameras);
  }
  return out;
}

void CatalogView::refresh() {
  const int64_t version = data_version();
  if (version == seen_version_) return;
  changed_since_counts_ = true;
  people_by_word_.clear();
  // The library's size only scales the choice to drive: the largest file id
  // (every model's files, and the deleted) bounds it in one index step.
  // Counting the model's files read a million index entries (35-50 ms) on
  // every new connection and after every commit of a running `tag`, and
  // made the requests that waited for it the slowest under load.
  photos_bound_ =
      db_->query_int("SELECT coalesce(max(id), 0) FROM files", "bound the library's size");
  // Every distinct label, one index seek each (a GROUP BY would read every
  // tag row: two million at a million photos).
  labels_.clear();
  Statement s(*db_, R"sql(
WITH RECURSIVE l (label) AS (
  SELECT min(label) FROM tags
  UNION ALL SELECT (SELECT min(label) FROM tags WHERE label > l.label) FROM l WHERE l.label IS NOT NULL)
SELECT label FROM l WHERE label IS NOT NULL
)sql", "list labels");
  while (s.step()) labels_.push_back(s.text(0));
  seen_version_ = version;
}

namespace {

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

void bind_all(Statement& s, int& i, const std::vector<SqlValue>& values) {
  for (const SqlValue& v : values) {
    if (v.is_text)
      s.bind(i++, std::string_view(v.text));
    else
      s.bind(i++, v.number);
  }
}

}  // namespace

std::vector<ResolvedWord> CatalogView::resolve(const std::vector<std::string>& words) {
  std::vector<ResolvedWord> out;
  for (const std::string& w : words) {
    ResolvedWord r;
    r.word = w;
    const std::string lw = ascii_lower(w);
    for (const std::string& l : labels_)
      if (ascii_lower(l).rfind(lw, 0) == 0) r.labels.push_back(l);
    if (auto known = people_by_word_.find(w); known != people_by_word_.end()) {
      r.people = known->second;
      out.push_back(std::move(r));
      continue;
    }
    const char* like = sql_for(db_->dialect()).like;
    const std::string sql = std::string("SELECT id FROM people WHERE name") + like + "?1 ESCAPE '\\' OR name" + like +
                            "?2 ESCAPE '\\'";
    Statement s(*db_, sql.c_str(), "find people by name");
    const std::string e = like_escape(w);
    s.bind(1, e + "%");
    s.bind(2, "% " + e + "%");
    while (s.step()) r.people.push_back(s.int64(0));
    if (people_by_word_.size() >= kWordsKept) people_by_word_.clear();
    people_by_word_.emplace(w, r.people);
    out.push_back(std::move(r));
  }
  return out;
}

int64_t CatalogView::count_matches(const SqlPart& drive) {
  const std::string sql = "SELECT count(*) FROM (" + drive.sql + " LIMIT " +
                          std::to_string(drive_count_limit(photos_bound_)) + ") AS matches";
  const auto now = std::chrono::steady_clock::now();
  if (changed_since_counts_ && now - counts_since_ >= counts_kept_after_change_) {
    counts_.clear();
    changed_since_counts_ = false;
  }
  if (counts_.empty()) counts_since_ = now;
  std::string key = sql;
  for (const SqlValue& v : drive.values) {
    key += '\x1f';
    if (v.is_text) {
      key += v.text;
    } else {
      char number[32];
      std::snprintf(number, sizeof number, "%.17g", v.number);
      key += number;
    }
  }
  if (auto it = counts_.find(key); it != counts_.end()) return it->second;
  Statement s(*db_, sql.c_str(), "count a filter's photos");
  ++counts_run_;
  int i = 1;
  bind_all(s, i, drive.values);
  const int64_t n = s.step() ? s.int64(0) : 0;
  if (counts_.size() >= kCountsKept) counts_.clear();
  counts_.emplace(std::move(key), n);
  return n;
}

CatalogView::Route CatalogView::choose_route(const std::vector<FilterClause>& clauses) {
  if (plan_ == Plan::walk) return {};
  std::vector<int> indexed;
  for (size_t k = 0; k < clauses.size(); ++k)
    if (!clauses[k].drive.sql.empty()) indexed.push_back(int(k));
  // A filter read newest first along an index of its own: a tag's or a
  // person's (its route), or a camera's (the date walk's).
  auto dated_route = [&](int k) {
    return clauses[size_t(k)].camera_walk ? Route{} : Route{k, true};
  };
  // A search word reads its file names' matches whole: only while they
  // are few enough to sort (counted like a drive's).
  auto dated = [&](int k) {
    const FilterClause& c = clauses[size_t(k)];
    if (c.camera_walk) return true;
    if (c.dated.empty()) return false;
    return c.dated_bound.sql.empty() ||
           count_matches(c.dated_bound) < drive_count_limit(photos_bound_);
  };
  // One filter with an index, and a dated one: walking it needs no count.
  if (plan_ == Plan::choose && indexed.size() == 1 && dated(indexed[0]))
    return dated_route(indexed[0]);
  int best = -1, best_dated = -1;
  int64_t fewest = 0, fewest_dated = 0;
  for (int k : indexed) {
    const int64_t n = count_matches(clauses[size_t(k)].drive);
    if (best < 0 || n < fewest) best = k, fewest = n;
    // A camera wins a tie (both past the count's cap): its photos cluster
    // in the years it was used, so a tag's walk may cross years without one.
    if (dated(k) && (best_dated < 0 || n < fewest_dated ||
                     (n == fewest_dated && clauses[size_t(k)].camera_walk)))
      best_dated = k, fewest_dated = n;
  }
  if (plan_ == Plan::drive) return {best, false};
  if (plan_ == Plan::dated_filter) {
    for (int k : indexed)
      if (!clauses[size_t(k)].dated.empty()) return {k, true};
    return {};
  }
  // A dated index's walk never reads more rows than driving by its filter
  // would sort; another filter drives when it matches fewer photos and few
  // enough.
  if (best >= 0 && best == best_dated) return dated_route(best);
  if (best >= 0 && should_drive(fewest, photos_bound_)) return {best, false};
  if (best_dated >= 0) return dated_route(best_dated);
  return {};
}

std::vector<CatalogView::Key> CatalogView::dated_filter_keys(
    const PhotoQuery& q, const std::vector<FilterClause>& clauses, int clause, bool dated,
    int limit) {
  const bool continues = q.after && q.after->dated == dated;
  const FilterClause& by = clauses[size_t(clause)];
  const DialectSql& d = sql_for(db_->dialect());
  // An index holds (key, taken_at, file_id): a dated page reads it newest
  // first, an undated one its NULL dates by file id. DISTINCT: a person
  // may have two faces in one photo. The index's date is the photo's (the
  // catalog's triggers keep it so): a date range is its range, and a dated
  // page reads photo_meta only for a filter that tests it.
  auto tested = [&](const FilterClause& c) { return &c != &by && !(dated && c.date_range); };
  const bool meta =
      !dated || std::any_of(clauses.begin(), clauses.end(),
                            [&](const FilterClause& c) { return tested(c) && c.reads_meta; });
  const char* order = dated ? " ORDER BY taken_at DESC, file_id DESC" : " ORDER BY file_id DESC";
  auto branch = [&](const DatedSource& src) {
    SqlPart b;
    b.add(std::string("SELECT DISTINCT w.file_id AS file_id, ") + (dated ? "w.taken_at" : "NULL") +
              " AS taken_at FROM ",
          {});
    b.add(src.from.sql, src.from.values);
    b.add(std::string(d.cross_join) + "files f ON f.id = w.file_id" +
          (!meta ? std::string()
                 : (dated ? d.cross_join : std::string(" LEFT JOIN ")) +
                       "photo_meta m ON m.file_id = w.file_id") +
          " WHERE 1 = 1");
    b.add(src.where.sql, src.where.values);
    b.add(" AND f.model_id = ?", {{true, model_, 0}});
    if (dated) {
      b.add(" AND w.taken_at IS NOT NULL");
      // A date range bounds the index range, not only the rows' test.
      const SqlPart range = date_range(q.filter, "w.taken_at");
      b.add(range.sql, range.values);
      if (continues)
        b.add(" AND (w.taken_at, w.file_id) < (?, ?)",
              {{true, q.after->taken_at, 0}, {false, {}, double(q.after->id)}});
    } else {
      b.add(" AND w.taken_at IS NULL AND m.taken_at IS NULL");
      if (continues) b.add(" AND w.file_id < ?", {{false, {}, double(q.after->id)}});
    }
    // The walked filter's own test is its index's condition already.
    for (const FilterClause& c : clauses) {
      if (!tested(c) && !(&c == &by && src.superset)) continue;
      const SqlPart test = c.test_on("w.file_id");
      b.add(test.sql, test.values);
    }
    b.add(std::string(order) + " LIMIT ?", {{false, {}, double(limit)}});
    return b;
  };
  // Several sources (a search word's labels, people and file names): each
  // one's newest `limit`, merged.
  SqlPart all;
  if (by.dated.size() == 1) {
    all = branch(by.dated[0]);
  } else {
    all.add("SELECT file_id, taken_at FROM (");
    for (size_t k = 0; k < by.dated.size(); ++k) {
      const SqlPart b = branch(by.dated[k]);
      all.add(std::string(k ? " UNION " : "") + "SELECT * FROM (" + b.sql + ")", b.values);
    }
    all.add(std::string(")") + order + " LIMIT ?", {{false, {}, double(limit)}});
  }
  Statement s(*db_, all.sql.c_str(),
              dated ? "list a filter's dated photos" : "list a filter's undated photos");
  int i = 1;
  bind_all(s, i, all.values);
  std::vector<Key> keys;
  while (s.step()) keys.push_back({s.int64(0), s.is_null(1) ? std::string() : s.text(1)});
  return keys;
}

std::vector<CatalogView::Key> CatalogView::page_keys(const PhotoQuery& q,
                                                     const std::vector<FilterClause>& clauses,
                                                     Route route, bool dated, int limit) {
  if (route.dated_filter) return dated_filter_keys(q, clauses, route.clause, dated, limit);
  const int drive = route.clause;
  const bool continues = q.after && q.after->dated == dated;
  const DialectSql& d = sql_for(db_->dialect());
  const std::string driven = drive >= 0 ? "(SELECT DISTINCT file_id FROM (" + clauses[size_t(drive)].drive.sql +
                                              ") AS matches) d" + d.cross_join
                                        : "";
  std::string sql;
  if (dated) {
    // A walk follows the date index, or a camera's when both make and model
    // are asked (equal make and model: its rows are in date order too).
    const bool camera = !q.filter.make.empty() && !q.filter.model.empty();
    sql = "SELECT m.file_id, m.taken_at FROM " + driven + "photo_meta m" +
          (drive >= 0 ? " ON m.file_id = d.file_id"
                      : d.hint(camera ? "photo_meta_by_camera_date" : "photo_meta_by_date")) +
          d.cross_join + "files f ON f.id = m.file_id WHERE f.model_id = ? AND m.taken_at IS NOT NULL";
    if (continues) sql += " AND (m.taken_at, m.file_id) < (?, ?)";
  } else {
    sql = "SELECT f.id, NULL FROM " + driven + "files f" +
          (drive >= 0 ? " ON f.id = d.file_id" : d.hint("files_by_model")) +
          " LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.model_id = ? AND m.taken_at IS NULL";
    if (continues) sql += " AND f.id < ?";
  }
  // Each row tested as soon as it is read, before its joins.
  const std::string row_id = drive >= 0 ? "d.file_id" : dated ? "m.file_id" : "f.id";
  std::vector<SqlPart> tests;
  for (const FilterClause& c : clauses) sql += tests.emplace_back(c.test_on(row_id)).sql;
  sql += dated ? " ORDER BY m.taken_at DESC, m.file_id DESC LIMIT ?" : " ORDER BY f.id DESC LIMIT ?";
  Statement s(*db_, sql.c_str(), dated ? "list dated photos" : "list undated photos");
  int i = 1;
  if (drive >= 0) bind_all(s, i, clauses[size_t(drive)].drive.values);
  s.bind(i++, model_);
  if (continues && dated) s.bind(i++, q.after->taken_at);
  if (continues) s.bind(i++, q.after->id);
  for (const SqlPart& t : tests) bind_all(s, i, t.values);
  s.bind(i++, int64_t(limit));
  std::vector<Key> keys;
  while (s.step()) keys.push_back({s.int64(0), s.is_null(1) ? std::string() : s.text(1)});
  return keys;
}

json CatalogView::photo_row(int64_t id) {
  Statement s(*db_, (std::string("SELECT ") + kPhotoColumns +
                     " FROM files f LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.id = ?1")
                        .c_str(),
              "read a photo of a page");
  s.bind(1, id);
  return s.step() ? photo_json(s) : json(nullptr);
}

json CatalogView::photos(const PhotoQuery& q) {
  ReadTransaction tx(*db_);
  refresh();
  const std::vector<FilterClause> clauses =
      filter_clauses(q.filter, resolve(q.filter.words), sql_for(db_->dialect()));
  const Route route = choose_route(clauses);
  // One more than asked tells whether another page follows. Keys first,
  // then the page's columns (its duplicate counts above all) for those
  // rows alone.
  const int want = q.limit + 1;
  std::vector<Key> keys;
  if (!q.after || q.after->dated) keys = page_keys(q, clauses, route, true, want);
  if (int(keys.size()) < want && q.filter.admits_undated()) {
    PhotoQuery rest = q;
    if (q.after && q.after->dated) rest.after.reset();
    for (Key& k : page_keys(rest, clauses, route, false, want - int(keys.size())))
      keys.push_back(std::move(k));
  }
  json next = nullptr;
  if (int(keys.size()) > q.limit) {
    keys.pop_back();
    const Key& last = keys.back();
    next = encode_cursor(Cursor{!last.taken_at.empty(), last.taken_at, last.id});
  }
  json photos = json::array();
  for (const Key& k : keys)
    if (json p = photo_row(k.id); !p.is_null()) photos.push_back(std::move(p));
  return json{{"photos", std::move(photos)}, {"next", std::move(next)}};
}

json CatalogView::photo(int64_t id) {
  ReadTransaction tx(*db_);
  json p;
  std::string hash;
  {
    Statement s(*db_, (std::string("SELECT ") + kPhotoColumns +
                       ", f.error, f.content_hash FROM files f LEFT JOIN photo_meta m ON m.file_id = f.id"
                       " WHERE f.id = ?1 AND f.model_id = ?2")
                          .c_str(),
                "read photo");
    s.bind(1, id);
    s.bind(2, model_);
    if (!s.step()) return nullptr;
    p = photo_json(s);
    p["size"] = s.int64(6);
    p["error"] = text_or_null(s, 9);
    hash = s.text(10);
  }
  {
    Statement s(*db_, R"sql(
SELECT taken_at, taken_offset, make, model, lens, exposure_s, f_number, iso, focal_length_mm, latitude,
       longitude, altitude_m FROM photo_meta WHERE file_id = ?1
)sql", "read photo metadata");
    s.bind(1, id);
    p["meta"] = nullptr;
    if (s.step()) {
      json m;
      const char* text_keys[] = {"taken_at", "taken_offset", "make", "model", "lens"};
      for (int c = 0; c < 5; ++c) m[text_keys[c]] = text_or_null(s, c);
      const char* real_keys[] = {"exposure_s", "f_number", "iso", "focal_length_mm", "latitude", "longitude", "altitude_m"};
      for (int c = 0; c < 7; ++c) m[real_keys[c]] = real_or_null(s, c + 5);
      if (!s.is_null(7)) m["iso"] = s.int64(7);
      p["meta"] = std::move(m);
    }
  }
  {
    Statement s(*db_, "SELECT label, score FROM tags WHERE file_id = ?1 ORDER BY rank", "read tags");
    s.bind(1, id);
    json tags = json::array();
    while (s.step()) tags.push_back({{"label", s.text(0)}, {"score", s.real(1)}});
    p["tags"] = std::move(tags);
  }
  {
    Statement s(*db_, "SELECT label, score, x1, y1, x2, y2 FROM objects WHERE file_id = ?1 ORDER BY rank",
                "read objects");
    s.bind(1, id);
    json objects = json::array();
    while (s.step()) objects.push_back({{"label", s.text(0)}, {"score", s.real(1)}, {"box", box_json(s, 2)}});
    p["objects"] = std::move(objects);
  }
  {
    Statement s(*db_, R"sql(
SELECT x.id, x.score, x.x1, x.y1, x.x2, x.y2, x.age, x.gender_score, p.id, p.name
FROM faces x LEFT JOIN people p ON p.id = x.person_id AND x.ignored = 0
WHERE x.file_id = ?1 ORDER BY x.rank
)sql", "read faces");
    s.bind(1, id);
    json faces = json::array();
    while (s.step()) {
      json person = s.is_null(8) ? json(nullptr) : json{{"id", s.int64(8)}, {"name", text_or_null(s, 9)}};
      faces.push_back({{"id", s.int64(0)},
                       {"score", s.real(1)},
                       {"box", box_json(s, 2)},
                       {"age", s.real(6)},
                       {"gender_score", s.real(7)},
                       {"person", std::move(person)}});
    }
    p["faces"] = std::move(faces);
  }
  {
    Statement s(*db_, "SELECT id FROM files WHERE content_hash = ?1 AND model_id = ?2 AND id != ?3 ORDER BY id",
                "read duplicates");
    s.bind(1, hash);
    s.bind(2, model_);
    s.bind(3, id);
    json dups = json::array();
    while (s.step()) dups.push_back(s.int64(0));
    p["duplicates"] = std::move(dups);
  }
  return p;
}

json CatalogView::people() {
  ReadTransaction tx(*db_);
  Statement s(*db_, R"sql(
SELECT p.id, p.name, p.faces, x.file_id, x.x1, x.y1, x.x2, x.y2
FROM people p
LEFT JOIN faces x ON x.id = (SELECT id FROM faces WHERE person_id = p.id AND ignored = 0 ORDER BY score DESC, id LIMIT 1)
WHERE p.faces > 0 OR p.name IS NOT NULL
ORDER BY p.name IS NULL, p.faces DESC, p.id
)sql", "list people");
  json people = json::array();
  while (s.step()) {
    people.push_back({{"id", s.int64(0)},
                      {"name", text_or_null(s, 1)},
                      {"faces", s.int64(2)},
                      {"photo", s.is_null(3) ? json(nullptr) : json(s.int64(3))},
                      {"box", s.is_null(4) ? json(nullptr) : box_json(s, 4)}});
  }
  return json{{"people", std::move(people)}};
}

json CatalogView::duplicates(const std::optional<std::string>& after_hash, int limit) {
  ReadTransaction tx(*db_);
  std::vector<std::string> hashes;
  {
    Statement s(*db_, R"sql(
SELECT content_hash FROM files WHERE model_id = ?1 AND content_hash > ?2 AND status = 'ok'
GROUP BY content_hash HAVING count(*) > 1 ORDER BY content_hash LIMIT ?3
)sql", "list duplicates");
    s.bind(1, model_);
    s.bind(2, std::string_view(after_hash ? *after_hash : std::string()));
    s.bind(3, int64_t(limit) + 1);
    while (s.step()) hashes.push_back(s.text(0));
  }
  json next = nullptr;
  if (int(hashes.size()) > limit) {
    hashes.pop_back();
    next = hashes.back();
  }
  json groups = json::array();
  Statement s(*db_, (std::string("SELECT ") + kPhotoColumns +
                     " FROM files f LEFT JOIN photo_meta m ON m.file_id = f.id"
                     " WHERE f.content_hash = ?1 AND f.model_id = ?2 ORDER BY f.id")
                        .c_str(),
              "read a duplicate group");
  for (const std::string& h : hashes) {
    Statement::Use use(s);
    s.bind(1, h);
    s.bind(2, model_);
    json photos = json::array();
    while (s.step()) photos.push_back(photo_json(s));
    groups.push_back({{"hash", h}, {"photos", std::move(photos)}});
  }
  return json{{"groups", std::move(groups)}, {"next", std::move(next)}};
}

std::optional<PhotoFile> CatalogView::photo_file(int64_t id) {
  Statement s(*db_, "SELECT path, size, mtime_ns, width, height FROM files WHERE id = ?1 AND model_id = ?2",
              "look up photo file");
  s.bind(1, id);
  s.bind(2, model_);
  if (!s.step()) return std::nullopt;
  return PhotoFile{id, s.text(0), s.int64(1), s.int64(2), int(s.int64(3)), int(s.int64(4))};
}

std::vector<std::string> CatalogView::roots() {
  Statement s(*db_, "SELECT path FROM roots ORDER BY path", "read roots");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

}  // namespace tandem::gallery
