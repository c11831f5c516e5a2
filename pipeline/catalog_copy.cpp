#include "pipeline/catalog_copy.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/sql.h"

namespace tandem::pipeline {

namespace {

enum class Kind { integer, real, text, floats };

struct Column {
  const char* name;
  Kind kind;
};

// Every table a catalog holds, parents before the tables that refer to
// them, with their columns as the schema has them.
struct Table {
  const char* name;
  std::vector<Column> columns;
  int64_t CopyCounts::*count;
};

const std::vector<Table>& tables() {
  using K = Kind;
  static const std::vector<Table> t = {
      {"files",
       {{"id", K::integer}, {"path", K::text}, {"model_id", K::text}, {"size", K::integer}, {"mtime_ns", K::integer},
        {"content_hash", K::text}, {"status", K::text}, {"error_kind", K::text}, {"error", K::text},
        {"decode_ms", K::real}, {"infer_ms", K::real}, {"width", K::integer}, {"height", K::integer},
        {"tagged_at", K::text}},
       &CopyCounts::files},
      {"tags", {{"file_id", K::integer}, {"rank", K::integer}, {"label", K::text}, {"score", K::real}}, &CopyCounts::tags},
      {"objects",
       {{"file_id", K::integer}, {"rank", K::integer}, {"label", K::text}, {"score", K::real}, {"x1", K::real},
        {"y1", K::real}, {"x2", K::real}, {"y2", K::real}},
       &CopyCounts::objects},
      {"people",
       {{"id", K::integer}, {"name", K::text}, {"centroid", K::floats}, {"faces", K::integer}, {"created_at", K::text}},
       &CopyCounts::people},
      {"faces",
       {{"id", K::integer}, {"file_id", K::integer}, {"rank", K::integer}, {"score", K::real}, {"x1", K::real},
        {"y1", K::real}, {"x2", K::real}, {"y2", K::real}, {"landmarks", K::text}, {"descriptor", K::floats},
        {"age", K::real}, {"gender_score", K::real}, {"person_id", K::integer}, {"confirmed", K::integer},
        {"ignored", K::integer}},
       &CopyCounts::faces},
      {"photo_meta",
       {{"file_id", K::integer}, {"taken_at", K::text}, {"taken_offset", K::text}, {"make", K::text},
        {"model", K::text}, {"lens", K::text}, {"exposure_s", K::real}, {"f_number", K::real}, {"iso", K::integer},
        {"focal_length_mm", K::real}, {"latitude", K::real}, {"longitude", K::real}, {"altitude_m", K::real}},
       &CopyCounts::metadata},
      {"roots", {{"path", K::text}, {"added_at", K::text}}, &CopyCounts::roots},
  };
  return t;
}

std::string column_list(const Table& t) {
  std::string r;
  for (const Column& c : t.columns) r += (r.empty() ? "" : ", ") + std::string(c.name);
  return r;
}

std::string select_sql(const Table& t) { return "SELECT " + column_list(t) + " FROM " + t.name + " ORDER BY 1"; }

std::string insert_sql(const Table& t) {
  std::string values;
  for (size_t i = 0; i < t.columns.size(); ++i) values += (i ? ", ?" : "?") + std::to_string(i + 1);
  return "INSERT INTO " + std::string(t.name) + " (" + column_list(t) + ") VALUES (" + values + ")";
}

// One row's column i from `from` into parameter i + 1 of `to`; NULL stays
// NULL (an unbound parameter).
void copy_value(const Column& c, int i, const sql::Statement& from, sql::Statement& to) {
  if (from.is_null(i)) return;
  switch (c.kind) {
    case Kind::integer: return to.bind(i + 1, from.int64(i));
    case Kind::real: return to.bind(i + 1, from.real(i));
    case Kind::text: return to.bind(i + 1, std::string_view(from.text(i)));
    case Kind::floats: {
      const std::vector<float> v = from.floats(i);
      return to.bind(i + 1, std::span<const float>(v));
    }
  }
}

int64_t copy_table(const Table& t, sql::Database& src, sql::Database& dst) {
  const std::string select = select_sql(t), insert = insert_sql(t);
  sql::Statement from(src, select.c_str(), "read rows to copy");
  sql::Statement to(dst, insert.c_str(), "write copied rows");
  sql::Statement::Use reading(from);
  int64_t rows = 0;
  while (from.step()) {
    sql::Statement::Use use(to);
    for (size_t i = 0; i < t.columns.size(); ++i) copy_value(t.columns[i], int(i), from, to);
    to.run();
    ++rows;
  }
  return rows;
}

}  // namespace

CopyCounts copy_catalog(const std::string& src, const std::string& dst) {
  // Opening each as a catalog checks it is one, migrates an older one and
  // gives an empty destination its schema.
  { Catalog check_src(src), check_dst(dst); }
  std::unique_ptr<sql::Database> from = sql::open_database(src), to = sql::open_database(dst);
  check(to->query_int("SELECT count(*) FROM files", "count files") == 0,
        "the destination already holds files: copy into a new catalog", ErrorContext{to->name(), "", "", ""});
  CopyCounts counts;
  from->begin_read("begin reading the catalog to copy");
  to->begin_write("begin the copy");
  try {
    // A SQLite destination's people table may hold named people without
    // faces only if it has files; it has none: start from empty tables.
    to->exec("DELETE FROM people", "empty the destination's people");
    for (const Table& t : tables()) counts.*t.count = copy_table(t, *from, *to);
    if (to->dialect() == sql::Dialect::postgresql) {
      // Explicit ids do not move identity sequences: the next insert must
      // not reuse a copied id.
      to->exec("SELECT setval(pg_get_serial_sequence('files', 'id'), coalesce(max(id), 0) + 1, false) FROM files;"
               "SELECT setval(pg_get_serial_sequence('people', 'id'), coalesce(max(id), 0) + 1, false) FROM people;"
               "SELECT setval(pg_get_serial_sequence('faces', 'id'), coalesce(max(id), 0) + 1, false) FROM faces;"
               "UPDATE tandem_meta SET value = value + 1 WHERE key = 'people_version'",
               "move the id sequences past the copied ids");
    }
    to->commit("commit the copy");
    from->commit("end reading the catalog to copy");
  } catch (...) {
    to->rollback_if_open();
    from->rollback_if_open();
    throw;
  }
  return counts;
}

}  // namespace tandem::pipeline
