// Catalogs an older tandem wrote open in this one: schema version 1 (files
// and tags, before objects had a table) is migrated in place, in one
// transaction, its rows kept as they were. The version-1 catalog is built
// here by the stock sqlite3 tool from that version's SQL, verbatim, so the
// test does not depend on the code that migrates it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "catalog_test_util.h"
#include "pipeline/catalog.h"
#include "temp_dir.h"

using namespace tandem;
using namespace tandem::pipeline;
using namespace tandem::testing;

namespace {

// Schema version 1 as tandem created it (PRAGMA user_version = 1).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE files (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  model_id TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
  error_kind TEXT,
  error TEXT,
  decode_ms REAL NOT NULL,
  infer_ms REAL NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  tagged_at TEXT NOT NULL,
  UNIQUE (path, model_id)
);
CREATE TABLE tags (
  file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  label TEXT NOT NULL,
  score REAL NOT NULL,
  PRIMARY KEY (file_id, rank)
) WITHOUT ROWID;
CREATE INDEX tags_by_label ON tags (label, score);
PRAGMA application_id = 1953391725;
PRAGMA user_version = 1;
PRAGMA journal_mode = WAL;
)sql";

// A SQL string literal.
std::string sql_text(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string sql_optional(const std::string& s) { return s.empty() ? "NULL" : sql_text(s); }

// The rows a version-1 tandem wrote for `records` (REAL columns to 17
// digits: the doubles exactly).
std::string v1_rows(const std::vector<FileRecord>& records) {
  std::string sql = "BEGIN;\n";
  for (size_t i = 0; i < records.size(); ++i) {
    const FileRecord& r = records[i];
    sql += fmt::format(
        "INSERT INTO files VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {:.17g}, {:.17g}, {}, {}, "
        "'2024-05-0{}T10:00:00.000Z');\n",
        i + 1, sql_text(r.path), sql_text(r.model_id), r.size, r.mtime_ns, sql_text(r.content_hash),
        r.ok ? "'ok'" : "'failed'", sql_optional(r.error_kind), sql_optional(r.error), r.decode_ms,
        r.infer_ms, r.width, r.height, 1 + i % 9);
    for (size_t k = 0; k < r.tags.size(); ++k)
      sql += fmt::format("INSERT INTO tags VALUES ({}, {}, {}, {:.17g});\n", i + 1, k,
                         sql_text(r.tags[k].label), double(r.tags[k].score));
  }
  return sql + "COMMIT;\n";
}

// The records as version 1 kept them: no objects.
std::vector<FileRecord> without_objects(std::vector<FileRecord> records) {
  for (auto& r : records) r.objects.clear();
  return records;
}

// A version-1 catalog at `path` holding `records`, then `extra` SQL.
void make_v1_catalog(const TempDir& dir, const std::string& path,
                     const std::vector<FileRecord>& records, const std::string& extra = "") {
  std::string script = dir.write("v1.sql", kSchemaV1 + v1_rows(records) + extra);
  sqlite3_cli(path, ".read " + script);
  ASSERT_EQ(sqlite3_cli(path, "PRAGMA user_version; PRAGMA application_id"), "1\n1953391725\n");
}

// Every row of the version-1 tables, as the sqlite3 tool prints them.
// The columns version 1 had (later versions add some to tags).
std::string v1_dump(const std::string& path) {
  return sqlite3_cli(path,
                     "SELECT * FROM files ORDER BY id; "
                     "SELECT file_id, rank, label, score FROM tags ORDER BY file_id, rank");
}

}  // namespace

TEST(CatalogMigration, Version1CatalogKeepsItsRowsAndTakesObjects) {
  TempDir dir("catalog_migration");
  std::string path = dir.file("old.sqlite");
  const std::vector<FileRecord> old = without_objects(synthetic_records(30, 0));
  make_v1_catalog(dir, path, old);
  const std::string before = v1_dump(path);
  {
    Catalog c(path);
    EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(old)));
    EXPECT_TRUE(c.up_to_date(old[4].path, old[4].size, old[4].mtime_ns, "centernet"));
  }
  EXPECT_EQ(v1_dump(path), before) << "the migration changed rows (tagged_at included)";
  EXPECT_EQ(
      sqlite3_cli(path, "PRAGMA user_version; PRAGMA integrity_check; PRAGMA foreign_key_check"),
      fmt::format("{}\nok\n", Catalog::kSchemaVersion));
  EXPECT_EQ(
      sqlite3_cli(path, "SELECT name FROM sqlite_schema WHERE tbl_name = 'objects' ORDER BY name"),
      "objects\nobjects_by_label\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT name FROM sqlite_schema WHERE tbl_name = 'photo_meta' AND type = 'index' "
                              "ORDER BY name"),
            "photo_meta_by_camera_date\nphoto_meta_by_date\nphoto_meta_by_place\n");
  // The file-name index covers the files that were there before it.
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM file_paths WHERE file_paths MATCH '\"IMG_\"'"), "30\n");

  // Tagged before metadata was kept: every photo that did not fail waits
  // for its EXIF to be read; storing it (or tagging the file again) takes
  // it off the list.
  {
    Catalog c(path);
    int64_t ok = 0;
    for (const FileRecord& r : old) {
      EXPECT_EQ(c.metadata_pending(r.path, "centernet"), r.ok) << r.path;
      EXPECT_FALSE(c.metadata_pending(r.path, "other model")) << r.path;
      ok += r.ok;
    }
    ASSERT_GT(ok, 1);
    image::PhotoMetadata m;
    m.taken_at = "2009-12-31T23:59:59";
    m.make = "NIKON";
    const std::pair<std::string, image::PhotoMetadata> read[] = {{old[1].path, m}};
    c.backfill_metadata(read, "centernet");
    EXPECT_FALSE(c.metadata_pending(old[1].path, "centernet"));
    EXPECT_EQ(
        sqlite3_cli(path,
                    "SELECT m.taken_at, m.make FROM photo_meta m JOIN files f ON f.id = m.file_id "
                    "WHERE f.path = '" +
                        old[1].path + "'"),
        "2009-12-31T23:59:59|NIKON\n");
    EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM meta_pending"), fmt::format("{}\n", ok - 1));
  }

  // Files tagged again (now with objects) beside files left as they were.
  std::vector<FileRecord> now = without_objects(synthetic_records(30, 0));
  std::vector<FileRecord> retagged;
  for (int i = 0; i < 30; i += 2) retagged.push_back(now[size_t(i)] = synthetic_record(i, 1));
  Catalog c(path);
  c.write(retagged);
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(now)));
  int64_t objects = 0;
  for (const auto& r : retagged) objects += int64_t(r.objects.size());
  ASSERT_GT(objects, 0);
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*), count(DISTINCT file_id) > 1 FROM objects"),
            fmt::format("{}|1\n", objects));
  // Tagged again: no longer waiting for their EXIF.
  for (const FileRecord& r : retagged)
    EXPECT_FALSE(c.metadata_pending(r.path, "centernet")) << r.path;
  // The date copies the gallery's tag index reads equal photo_meta's, for
  // the rows written before the migration and after.
  EXPECT_EQ(
      sqlite3_cli(path,
                  "SELECT count(*) FROM tags t LEFT JOIN photo_meta m ON m.file_id = t.file_id "
                  "WHERE t.taken_at IS NOT m.taken_at"),
      "0\n");
}

// The migration is one transaction: when one of its statements fails (here
// the index, after the table was made, as a user's own index already has
// its name), the catalog is left at version 1 with nothing added, and the
// error names the file.
TEST(CatalogMigration, FailedMigrationLeavesTheCatalogAsItWas) {
  TempDir dir("catalog_migration");
  std::string path = dir.file("old.sqlite");
  make_v1_catalog(dir, path, without_objects(synthetic_records(12, 0)),
                  "CREATE INDEX objects_by_label ON tags (label);\n");
  const std::string before = v1_dump(path);
  expect_error([&] { Catalog c(path); }, {path, "migrate schema", "objects_by_label"});
  EXPECT_EQ(sqlite3_cli(path, "PRAGMA user_version; PRAGMA integrity_check"), "1\nok\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'objects'"), "0\n");
  EXPECT_EQ(v1_dump(path), before);
}
