// A batch's rows written to PostgreSQL as columns: one parameter per
// column holding every row's value (an array in PostgreSQL's text input
// form), turned back into rows by unnest(). A server pays for each
// statement it parses, plans and answers, so ~14 statements a photo (its
// file row, then its tags, objects and metadata, each cleared first, and
// its queue row) cost more than the rows themselves: 0.37 ms a photo with
// one worker and 3,770 photos/s at best on the 2-core machine. SQLite runs
// in the process, where a statement costs microseconds, and keeps the
// row-at-a-time path.
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/sql.h"

namespace tandem::pipeline {

using sql::Statement;

namespace {

// One column of a batch, as PostgreSQL reads an array literal: text
// elements double-quoted with " and \ escaped, NULL bare.
class Column {
 public:
  void add(int64_t v) { next(std::to_string(v)); }
  void add(double v) {
    char text[32];
    if (std::isnan(v)) std::snprintf(text, sizeof text, "NaN");
    else if (std::isinf(v)) std::snprintf(text, sizeof text, v > 0 ? "Infinity" : "-Infinity");
    else std::snprintf(text, sizeof text, "%.17g", v);
    next(text);
  }
  void add(std::string_view v) {
    std::string quoted = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    next(quoted + '"');
  }
  void add_or_null(const std::string& v) { v.empty() ? next("NULL") : add(std::string_view(v)); }
  void add_or_null(const std::optional<double>& v) { v ? add(*v) : next("NULL"); }
  void add_or_null(const std::optional<int64_t>& v) { v ? add(*v) : next("NULL"); }
  std::string text() const { return "{" + items_ + "}"; }
  bool empty() const { return items_.empty(); }

 private:
  void next(const std::string& item) {
    if (!items_.empty()) items_ += ',';
    items_ += item;
  }
  std::string items_;
};

void bind_columns(Statement& s, const std::vector<Column>& columns) {
  for (size_t c = 0; c < columns.size(); ++c) s.bind(int(c + 1), std::string_view(columns[c].text()));
}

constexpr const char* kUpsertFiles = R"sql(
INSERT INTO files (path, model_id, size, mtime_ns, content_hash, status, error_kind, error,
                   decode_ms, infer_ms, width, height, tagged_at)
SELECT * FROM unnest(?1::text[], ?2::text[], ?3::bigint[], ?4::bigint[], ?5::text[], ?6::text[], ?7::text[],
                     ?8::text[], ?9::float8[], ?10::float8[], ?11::bigint[], ?12::bigint[], ?13::text[])
ON CONFLICT (path, model_id) DO UPDATE SET
  size = excluded.size, mtime_ns = excluded.mtime_ns, content_hash = excluded.content_hash,
  status = excluded.status, error_kind = excluded.error_kind, error = excluded.error,
  decode_ms = excluded.decode_ms, infer_ms = excluded.infer_ms, width = excluded.width,
  height = excluded.height, tagged_at = excluded.tagged_at
RETURNING id, path, model_id, (xmax = 0)::int
)sql";

constexpr const char* kInsertTags = R"sql(
INSERT INTO tags (file_id, rank, label, score)
SELECT * FROM unnest(?1::bigint[], ?2::bigint[], ?3::text[], ?4::float8[])
)sql";

constexpr const char* kInsertObjects = R"sql(
INSERT INTO objects (file_id, rank, label, score, x1, y1, x2, y2)
SELECT * FROM unnest(?1::bigint[], ?2::bigint[], ?3::text[], ?4::float8[], ?5::float8[], ?6::float8[],
                     ?7::float8[], ?8::float8[])
)sql";

constexpr const char* kInsertMeta = R"sql(
INSERT INTO photo_meta (file_id, taken_at, taken_offset, make, model, lens, exposure_s, f_number, iso,
                        focal_length_mm, latitude, longitude, altitude_m)
SELECT * FROM unnest(?1::bigint[], ?2::text[], ?3::text[], ?4::text[], ?5::text[], ?6::text[], ?7::float8[],
                     ?8::float8[], ?9::bigint[], ?10::float8[], ?11::float8[], ?12::float8[], ?13::float8[])
)sql";

constexpr const char* kFinishWork = R"sql(
UPDATE work w SET done = 1, done_by = w.owner, owner = NULL, lease_until = 0
FROM unnest(?1::text[], ?2::text[]) AS d (model_id, path)
WHERE w.model_id = d.model_id AND w.path = d.path AND w.done = 0
)sql";

}  // namespace

bool Catalog::can_write_in_bulk(std::span<const FileRecord> batch) const {
  if (db_->dialect() != sql::Dialect::postgresql) return false;
  // One statement may not upsert a row twice.
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const FileRecord& r : batch)
    if (!seen.insert({r.path, r.model_id}).second) return false;
  return true;
}

void Catalog::write_in_bulk(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people) {
  for (const FileRecord& r : batch) check_record(r);
  std::vector<int64_t> ids;
  std::vector<bool> fresh;
  upsert_files_in_bulk(batch, ids, fresh);
  std::vector<int64_t> replaced;
  for (size_t i = 0; i < batch.size(); ++i)
    if (!fresh[i]) replaced.push_back(ids[i]);
  if (!replaced.empty()) {
    Column list;
    for (int64_t id : replaced) list.add(id);
    for (const char* table : {"tags", "objects", "photo_meta"}) {
      const std::string sql = std::string("DELETE FROM ") + table + " WHERE file_id = ANY(?1::bigint[])";
      Statement s(*db_, sql.c_str(), "delete old rows");
      Statement::Use use(s);
      bind_columns(s, {list});
      s.run_later();
    }
  }
  insert_rows_in_bulk(batch, ids);
  {
    std::vector<Column> work(2);
    for (const FileRecord& r : batch) work[0].add(std::string_view(r.model_id)), work[1].add(std::string_view(r.path));
    Statement s(*db_, kFinishWork, "mark queued work done");
    Statement::Use use(s);
    bind_columns(s, work);
    s.run_later();
  }
  // Faces go one file at a time: each is matched to the file's old faces
  // and to the people, which it changes. A new file has no old faces.
  for (size_t i = 0; i < batch.size(); ++i) {
    std::vector<int64_t> assigned;
    if (!fresh[i] || !batch[i].faces.empty()) assigned = write_faces(ids[i], batch[i], fresh[i]);
    if (people) people->push_back(std::move(assigned));
  }
}

void Catalog::upsert_files_in_bulk(std::span<const FileRecord> batch, std::vector<int64_t>& ids,
                                   std::vector<bool>& fresh) {
  std::vector<Column> c(13);
  const std::string now = sql::utc_now();
  for (const FileRecord& r : batch) {
    c[0].add(std::string_view(r.path));
    c[1].add(std::string_view(r.model_id));
    c[2].add(r.size);
    c[3].add(r.mtime_ns);
    c[4].add(std::string_view(r.content_hash));
    c[5].add(std::string_view(r.ok ? "ok" : "failed"));
    c[6].add_or_null(r.error_kind);
    c[7].add_or_null(r.error);
    c[8].add(r.decode_ms);
    c[9].add(r.infer_ms);
    c[10].add(int64_t(r.width));
    c[11].add(int64_t(r.height));
    c[12].add(std::string_view(now));
  }
  Statement s(*db_, kUpsertFiles, "write file rows");
  Statement::Use use(s);
  bind_columns(s, c);
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, bool>> by_key;
  while (s.step()) by_key[{s.text(1), s.text(2)}] = {s.int64(0), s.int64(3) != 0};
  for (const FileRecord& r : batch) {
    auto it = by_key.find({r.path, r.model_id});
    check(it != by_key.end(), "the server returned no row for " + r.path, ErrorContext{path(), "", "", ""});
    ids.push_back(it->second.first);
    fresh.push_back(it->second.second);
  }
}

void Catalog::insert_rows_in_bulk(std::span<const FileRecord> batch, const std::vector<int64_t>& ids) {
  std::vector<Column> tags(4), objects(8), meta(13);
  for (size_t i = 0; i < batch.size(); ++i) {
    const FileRecord& r = batch[i];
    for (size_t rank = 0; rank < r.tags.size(); ++rank) {
      tags[0].add(ids[i]), tags[1].add(int64_t(rank));
      tags[2].add(std::string_view(r.tags[rank].label)), tags[3].add(double(r.tags[rank].score));
    }
    for (size_t rank = 0; rank < r.objects.size(); ++rank) {
      const DetectedObject& o = r.objects[rank];
      objects[0].add(ids[i]), objects[1].add(int64_t(rank));
      objects[2].add(std::string_view(o.label)), objects[3].add(double(o.score));
      objects[4].add(double(o.box.x1)), objects[5].add(double(o.box.y1));
      objects[6].add(double(o.box.x2)), objects[7].add(double(o.box.y2));
    }
    const image::PhotoMetadata& m = r.meta;
    if (m.empty() && m.taken_offset.empty()) continue;
    meta[0].add(ids[i]);
    meta[1].add_or_null(m.taken_at), meta[2].add_or_null(m.taken_offset);
    meta[3].add_or_null(m.make), meta[4].add_or_null(m.model), meta[5].add_or_null(m.lens);
    meta[6].add_or_null(m.exposure_s), meta[7].add_or_null(m.f_number);
    meta[8].add_or_null(m.iso ? std::optional<int64_t>(int64_t(*m.iso)) : std::nullopt);
    meta[9].add_or_null(m.focal_length_mm);
    meta[10].add_or_null(m.latitude), meta[11].add_or_null(m.longitude), meta[12].add_or_null(m.altitude_m);
  }
  for (auto [columns, sql, step] : {std::tuple{&tags, kInsertTags, "write tags"},
                                    std::tuple{&objects, kInsertObjects, "write objects"},
                                    std::tuple{&meta, kInsertMeta, "write metadata"}}) {
    if (columns->front().empty()) continue;
    Statement s(*db_, sql, step);
    Statement::Use use(s);
    bind_columns(s, *columns);
    s.run_later();
  }
}

}  // namespace tandem::pipeline
