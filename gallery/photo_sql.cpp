#include "gallery/photo_sql.h"

#include <algorithm>
#include <cmath>

namespace tandem::gallery {

namespace {

SqlValue text(std::string v) { return {true, std::move(v), 0}; }
SqlValue number(double v) { return {false, {}, v}; }

// Rows of an index in date order: `from` (as w) where `test` holds for `v`.
DatedSource dated_index(const std::string& from, const std::string& test, SqlValue v) {
  DatedSource src;
  src.from.add(from);
  src.where.add(test, {std::move(v)});
  return src;
}

std::string placeholders(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

// A word's test: the start of a label, a word of a person's name, or any
// part of the path (LIKE: ASCII letters fold case). Its drive query is a
// UNION ALL: the capped count is then an upper bound read in 1 ms, where
// UNION's de-duplication took 22 ms at a million photos; the driven page
// takes each id once (SELECT DISTINCT).
FilterClause word_clause(const ResolvedWord& w, const DialectSql& d) {
  FilterClause c;
  const std::string e = like_escape(w.word);
  std::string test = std::string(" AND (f.path") + d.like + "? ESCAPE '\\'";
  std::vector<SqlValue> values{text("%" + e + "%")};
  std::string drive;
  std::vector<SqlValue> drive_values;
  if (!w.labels.empty()) {
    test += " OR EXISTS (SELECT 1 FROM tags t WHERE t.file_id = {id} AND t.label IN (" +
            placeholders(w.labels.size()) + "))";
    drive += "SELECT t.file_id AS file_id FROM tags t WHERE t.label IN (" + placeholders(w.labels.size()) + ")";
    for (const std::string& l : w.labels) values.push_back(text(l)), drive_values.push_back(text(l));
  }
  if (!w.people.empty()) {
    // The photo's few faces read and each looked up in the list ("+" keeps
    // SQLite from seeking every person's entry instead: ten people named
    // Anna, half the walk's time).
    test += " OR EXISTS (SELECT 1 FROM faces x WHERE x.file_id = {id} AND +x.person_id IN (" +
            placeholders(w.people.size()) + "))";
    drive += std::string(drive.empty() ? "" : " UNION ALL ") + "SELECT x.file_id AS file_id FROM faces x WHERE x.person_id IN (" +
             placeholders(w.people.size()) + ")";
    for (int64_t p : w.people) values.push_back(number(double(p))), drive_values.push_back(number(double(p)));
  }
  test += ")";
  c.test.add(test, std::move(values));
  // The trigram index finds paths with three letters or more (folding case
  // beyond ASCII too: a superset, which the row test then narrows). A
  // shorter word has no index for its path part: it cannot drive.
  if (d.path_index && w.word.size() >= 3) {
    std::string quoted = "\"";
    for (char ch : w.word) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    quoted += "\"";
    const char* names_matching = "SELECT rowid AS file_id FROM file_paths WHERE file_paths MATCH ?";
    drive += std::string(drive.empty() ? "" : " UNION ALL ") + names_matching;
    drive_values.push_back(text(quoted));
    c.drive.add(drive, std::move(drive_values));
    if (d.dated_filters && w.labels.size() + w.people.size() + 1 <= kMaxDatedSources) {
      for (const std::string& l : w.labels)
        c.dated.push_back(
            dated_index("tags w" + d.hint("tags_by_label_date"), " AND w.label = ?", text(l)));
      for (int64_t p : w.people)
        c.dated.push_back(dated_index("faces w" + d.hint("faces_by_person_date"),
                                      " AND w.person_id = ?", number(double(p))));
      DatedSource names;
      names.from.add(
          "(SELECT p.rowid AS file_id, pm.taken_at AS taken_at FROM file_paths p"
          " LEFT JOIN photo_meta pm ON pm.file_id = p.rowid WHERE file_paths MATCH ?) w",
          {text(quoted)});
      names.superset = true;  // the trigram index folds case beyond ASCII
      c.dated.push_back(std::move(names));
      c.dated_bound.add(names_matching, {text(quoted)});
    }
  }
  return c;
}

}  // namespace

SqlPart FilterClause::test_on(const std::string& id) const {
  SqlPart p = test;
  const std::string mark = kRowId;
  for (size_t at = p.sql.find(mark); at != std::string::npos; at = p.sql.find(mark, at + id.size()))
    p.sql.replace(at, mark.size(), id);
  return p;
}

void SqlPart::add(const std::string& more, std::vector<SqlValue> v) {
  sql += more;
  for (SqlValue& x : v) values.push_back(std::move(x));
}

bool should_drive(int64_t matches, int64_t photos) {
  return matches <= kDriveCountCap && matches * matches <= 64 * photos;
}

int64_t drive_count_limit(int64_t photos) {
  // The largest m with m * m <= 64 * photos (should_drive's bound), up to
  // the cap: the double's square root, corrected where it rounded.
  const int64_t area = 64 * std::max<int64_t>(photos, 0);
  int64_t m = int64_t(std::sqrt(double(area)));
  while (m * m > area) --m;
  while ((m + 1) * (m + 1) <= area) ++m;
  return std::min(m, kDriveCountCap) + 1;
}

SqlPart date_range(const PhotoFilter& f, const std::string& column) {
  SqlPart p;
  if (!f.from.empty()) p.add(" AND " + column + " >= ?", {text(f.from)});
  if (!f.to.empty()) p.add(" AND " + column + " < ?", {text(f.to)});
  return p;
}

const DialectSql& sql_for(pipeline::sql::Dialect d) {
  static const DialectSql sqlite;
  static const DialectSql postgresql{" ILIKE ", " JOIN ", false, false, false};
  return d == pipeline::sql::Dialect::sqlite ? sqlite : postgresql;
}

std::vector<FilterClause> filter_clauses(const PhotoFilter& f, const std::vector<ResolvedWord>& words,
                                         const DialectSql& d) {
  std::vector<FilterClause> out;
  if (!f.tag.empty()) {
    FilterClause c;
    // tags' primary key starts with file_id: the test reads one photo's few rows.
    c.test.add(" AND EXISTS (SELECT 1 FROM tags t WHERE t.file_id = {id} AND t.label = ?)",
               {text(f.tag)});
    c.drive.add("SELECT t.file_id AS file_id FROM tags t WHERE t.label = ?", {text(f.tag)});
    if (d.dated_filters)
      c.dated.push_back(
          dated_index("tags w" + d.hint("tags_by_label_date"), " AND w.label = ?", text(f.tag)));
    out.push_back(std::move(c));
  }
  if (f.person) {
    FilterClause c;
    c.test.add(" AND EXISTS (SELECT 1 FROM faces x WHERE x.file_id = {id} AND x.person_id = ?)",
               {number(double(f.person))});
    c.drive.add("SELECT x.file_id AS file_id FROM faces x WHERE x.person_id = ?", {number(double(f.person))});
    if (d.dated_filters)
      c.dated.push_back(dated_index("faces w" + d.hint("faces_by_person_date"),
                                    " AND w.person_id = ?", number(double(f.person))));
    out.push_back(std::move(c));
  }
  if (!f.from.empty() || !f.to.empty()) {
    // A date range is the walk's own index range; it never drives.
    FilterClause c;
    c.test = date_range(f, "m.taken_at");
    c.reads_meta = c.date_range = true;
    out.push_back(std::move(c));
  }
  if (!f.make.empty() || !f.model.empty()) {
    FilterClause c;
    c.reads_meta = true;
    if (!f.make.empty()) c.test.add(" AND m.make = ?", {text(f.make)});
    if (!f.model.empty()) c.test.add(" AND m.model = ?", {text(f.model)});
    if (!f.make.empty() && !f.model.empty()) {
      c.drive.add("SELECT m.file_id AS file_id FROM photo_meta m WHERE m.make = ? AND m.model = ?",
                  {text(f.make), text(f.model)});
      c.camera_walk = true;
    }
    out.push_back(std::move(c));
  }
  if (f.box) {
    const auto& b = *f.box;
    FilterClause c;
    c.reads_meta = true;
    std::vector<SqlValue> v{number(b[0]), number(b[2]), number(b[1]), number(b[3])};
    c.test.add(" AND m.latitude BETWEEN ? AND ? AND m.longitude BETWEEN ? AND ?", v);
    c.drive.add(
        "SELECT m.file_id AS file_id FROM photo_meta m WHERE m.latitude BETWEEN ? AND ? AND m.longitude BETWEEN ? AND ?",
        v);
    out.push_back(std::move(c));
  }
  for (const ResolvedWord& w : words) out.push_back(word_clause(w, d));
  return out;
}

}  // namespace tandem::gallery
