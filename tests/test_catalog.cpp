// The SQLite catalog: what goes in comes out (read back through the
// Catalog, and through the stock sqlite3 tool as the outside reference),
// tags and a detector's objects, re-run skipping, replacement of changed
// files, all-or-nothing batches, migrating a catalog an older tandem wrote,
// and refusing files that are not tandem catalogs (or newer ones).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "catalog_test_util.h"
#include "core/error.h"
#include "pipeline/catalog.h"
#include "temp_dir.h"

using namespace tandem;
using namespace tandem::pipeline;
using namespace tandem::testing;

namespace {

void write_in_batches(Catalog& c, const std::vector<FileRecord>& records, size_t batch) {
  for (size_t i = 0; i < records.size(); i += batch)
    c.write(std::span(records).subspan(i, std::min(batch, records.size() - i)));
}

int64_t total_tags(const std::vector<FileRecord>& records) {
  int64_t n = 0;
  for (const auto& r : records) n += int64_t(r.tags.size());
  return n;
}

int64_t total_objects(const std::vector<FileRecord>& records) {
  int64_t n = 0;
  for (const auto& r : records) n += int64_t(r.objects.size());
  return n;
}

}  // namespace

TEST(Catalog, RecordsComeBackAsWritten) {
  TempDir dir("catalog");
  auto records = synthetic_records(90, 0);
  Catalog c(dir.file("tags.sqlite"));
  write_in_batches(c, records, 7);
  auto back = c.records("centernet");
  auto want = sorted_by_path(records);
  ASSERT_EQ(contents_of(back), contents_of(want));
  for (size_t i = 0; i < back.size(); ++i) {  // timings too: REAL holds a double exactly
    EXPECT_EQ(back[i].decode_ms, want[i].decode_ms);
    EXPECT_EQ(back[i].infer_ms, want[i].infer_ms);
  }
  CatalogCounts n = c.counts("centernet");
  EXPECT_EQ(n.failed, std::count_if(records.begin(), records.end(), [](auto& r) { return !r.ok; }));
  EXPECT_EQ(n.ok + n.failed, 90);
  EXPECT_TRUE(c.records("other-model").empty());
}

TEST(Catalog, Sqlite3ToolReadsTheSchema) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  auto records = synthetic_records(40, 1);
  {
    Catalog c(path);
    c.write(records);
  }
  EXPECT_EQ(sqlite3_cli(path, "PRAGMA journal_mode; PRAGMA user_version; PRAGMA integrity_check"),
            fmt::format("wal\n{}\nok\n", Catalog::kSchemaVersion));
  // Tags of every file, best first, as a user's query would list them.
  std::string want;
  for (const auto& r : sorted_by_path(records))
    for (size_t k = 0; k < r.tags.size(); ++k)
      want += fmt::format("{}|{}|{}|{}\n", r.path, k, r.tags[k].label, r.ok ? "ok" : "failed");
  EXPECT_EQ(sqlite3_cli(path,
                        "SELECT f.path, t.rank, t.label, f.status FROM files f JOIN tags t ON "
                        "t.file_id = f.id WHERE f.model_id = 'centernet' ORDER BY f.path, t.rank"),
            want);
  // Scores as the double of the float written (%! : all 17 digits).
  std::string scores = sqlite3_cli(path, "SELECT printf('%!.17g', score) FROM tags ORDER BY score DESC LIMIT 1");
  float best = 0;
  for (const auto& r : records)
    for (const auto& t : r.tags) best = std::max(best, t.score);
  EXPECT_EQ(std::stod(scores), double(best));
  // Failed files keep their reason; successful ones have no error.
  const auto& failed = *std::find_if(records.begin(), records.end(), [](auto& r) { return !r.ok; });
  EXPECT_EQ(sqlite3_cli(path, "SELECT error_kind || ': ' || error FROM files WHERE path = '" + failed.path + "'"),
            failed.error_kind + ": " + failed.error + "\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM files WHERE status = 'ok' AND error IS NOT NULL"), "0\n");
}

TEST(Catalog, Sqlite3ToolReadsTheObjects) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  auto records = synthetic_records(40, 1);
  ASSERT_GT(total_objects(records), 20);
  { Catalog(path).write(records); }
  // Every dog, as a user's query lists them; boxes as the doubles of the
  // floats written (%! : all 17 digits).
  std::string want;
  for (const auto& r : sorted_by_path(records))
    for (size_t k = 0; k < r.objects.size(); ++k) {
      const DetectedObject& o = r.objects[k];
      if (o.label != "dog") continue;
      want += fmt::format("{}|{}|{}|{}|{}|{}|{}\n", r.path, k, double(o.score), double(o.box.x1),
                          double(o.box.y1), double(o.box.x2), double(o.box.y2));
    }
  ASSERT_FALSE(want.empty());
  std::string got =
      sqlite3_cli(path,
                  "SELECT f.path, o.rank, printf('%!.17g|%!.17g|%!.17g|%!.17g|%!.17g', o.score, "
                  "o.x1, o.y1, o.x2, o.y2) "
                  "FROM objects o JOIN files f ON f.id = o.file_id WHERE o.label = 'dog' AND "
                  "f.model_id = 'centernet' "
                  "ORDER BY f.path, o.rank");
  // printf's 17 digits and fmt's shortest form differ in text: compare numbers.
  std::istringstream got_lines(got), want_lines(want);
  std::string g, w;
  while (std::getline(want_lines, w)) {
    ASSERT_TRUE(std::getline(got_lines, g)) << "missing: " << w;
    auto fields = [](const std::string& line) {
      std::vector<std::string> f;
      std::istringstream in(line);
      for (std::string x; std::getline(in, x, '|');) f.push_back(x);
      return f;
    };
    auto gf = fields(g), wf = fields(w);
    ASSERT_EQ(gf.size(), 7u) << g;
    EXPECT_EQ(gf[0], wf[0]);
    EXPECT_EQ(gf[1], wf[1]);
    for (size_t k = 2; k < 7; ++k) EXPECT_EQ(std::stod(gf[k]), std::stod(wf[k])) << g;
  }
  EXPECT_FALSE(std::getline(got_lines, g)) << "extra: " << g;
  // "Photos with a dog" finds the objects through the label index.
  EXPECT_NE(sqlite3_cli(path, "EXPLAIN QUERY PLAN SELECT file_id FROM objects WHERE label = 'dog'")
                .find("objects_by_label"),
            std::string::npos);
  EXPECT_EQ(sqlite3_cli(path,
                        "SELECT count(*) FROM objects o JOIN files f ON f.id = o.file_id "
                        "WHERE f.status = 'failed'"),
            "0\n");
}

// What the camera wrote comes back as written, absent values as absent,
// and plain SQL finds photos by date range and place.
TEST(Catalog, PhotoMetadataComesBackAndAnswersDateAndPlaceQueries) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  auto records = synthetic_records(12, 0);
  for (size_t i = 0; i < records.size(); ++i) {
    image::PhotoMetadata& m = records[i].meta;
    if (i % 3 == 2) continue;  // no EXIF at all
    m.taken_at = fmt::format("2021-07-{:02d}T10:00:00", 1 + int(i));
    if (i % 2 == 0) m.taken_offset = "+02:00";
    m.make = "Canon";
    m.model = i % 2 ? "EOS R6" : "PowerShot G7 X";
    if (i == 4) m.lens = "RF24-105mm F4 L IS USM";
    m.exposure_s = 1.0 / 250;
    m.f_number = 4.0;
    m.iso = 100 * int(i + 1);
    m.focal_length_mm = 35.0;
    if (i < 6) {
      m.latitude = 48.8583701 + 0.01 * double(i);
      m.longitude = 2.2944813;
      m.altitude_m = i == 0 ? std::optional<double>(-12.5) : std::nullopt;
    }
  }
  {
    Catalog c(path);
    c.write(records);
    const std::vector<FileRecord> back = c.records("centernet");
    const std::vector<FileRecord> want = sorted_by_path(records);
    ASSERT_EQ(back.size(), want.size());
    for (size_t i = 0; i < back.size(); ++i) {
      const image::PhotoMetadata &a = back[i].meta, &b = want[i].meta;
      EXPECT_EQ(a.taken_at, b.taken_at) << back[i].path;
      EXPECT_EQ(a.taken_offset, b.taken_offset);
      EXPECT_EQ(a.make, b.make);
      EXPECT_EQ(a.model, b.model);
      EXPECT_EQ(a.lens, b.lens);
      EXPECT_EQ(a.exposure_s, b.exposure_s);
      EXPECT_EQ(a.f_number, b.f_number);
      EXPECT_EQ(a.iso, b.iso);
      EXPECT_EQ(a.focal_length_mm, b.focal_length_mm);
      EXPECT_EQ(a.latitude, b.latitude);
      EXPECT_EQ(a.longitude, b.longitude);
      EXPECT_EQ(a.altitude_m, b.altitude_m);
    }
    // A file tagged again without EXIF loses its row.
    FileRecord again = records[0];
    again.meta = {};
    c.write(std::span(&again, 1));
  }
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM photo_meta"), "7\n");
  EXPECT_EQ(sqlite3_cli(path,
                        "SELECT count(*) FROM photo_meta WHERE taken_at BETWEEN '2021-07-03' AND '2021-07-09'"),
            "4\n");
  EXPECT_EQ(sqlite3_cli(path,
                        "SELECT count(*) FROM photo_meta WHERE latitude BETWEEN 48.86 AND 48.90 AND longitude "
                        "BETWEEN 2.2 AND 2.3"),
            "3\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM photo_meta WHERE iso IS NULL OR latitude IS NULL"), "4\n");
  // The copies of the date beside each tag (the gallery's tag index) follow
  // the photo's row: written, and gone with it.
  EXPECT_EQ(
      sqlite3_cli(path,
                  "SELECT count(*) FROM tags t LEFT JOIN photo_meta m ON m.file_id = t.file_id "
                  "WHERE t.taken_at IS NOT m.taken_at"),
      "0\n");
  EXPECT_NE(sqlite3_cli(path, "SELECT count(*) FROM tags WHERE taken_at IS NOT NULL"), "0\n");
}

TEST(Catalog, UpToDateMeansSamePathModelSizeAndMtime) {
  TempDir dir("catalog");
  Catalog c(dir.file("tags.sqlite"));
  FileRecord ok = synthetic_record(1, 0), bad = synthetic_record(5, 0);
  ASSERT_FALSE(bad.ok);
  EXPECT_FALSE(c.up_to_date(ok.path, ok.size, ok.mtime_ns, ok.model_id));
  c.write(std::vector{ok, bad});
  EXPECT_TRUE(c.up_to_date(ok.path, ok.size, ok.mtime_ns, ok.model_id));
  EXPECT_TRUE(c.up_to_date(bad.path, bad.size, bad.mtime_ns, bad.model_id));  // failed counts as done
  EXPECT_FALSE(c.up_to_date(ok.path, ok.size + 1, ok.mtime_ns, ok.model_id));
  EXPECT_FALSE(c.up_to_date(ok.path, ok.size, ok.mtime_ns + 1, ok.model_id));
  EXPECT_FALSE(c.up_to_date(ok.path, ok.size, ok.mtime_ns, "mobilenet"));
  EXPECT_FALSE(c.up_to_date(ok.path + "x", ok.size, ok.mtime_ns, ok.model_id));
}

TEST(Catalog, ChangedFileReplacesItsRowAndTags) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  Catalog c(path);
  auto v0 = synthetic_records(50, 0), v1 = synthetic_records(50, 1);
  c.write(v0);
  write_in_batches(c, v1, 9);
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(v1)));
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*), count(DISTINCT path) FROM files"), "50|50\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM tags"), fmt::format("{}\n", total_tags(v1)));
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM objects"),
            fmt::format("{}\n", total_objects(v1)));
}

// A file tagged once, then changed so that it no longer decodes: its new
// record says why, and its old tags and objects are gone.
TEST(Catalog, FileThatNowFailsLosesItsObjects) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  Catalog c(path);
  FileRecord r = synthetic_record(3, 0);
  ASSERT_TRUE(r.ok);
  ASSERT_FALSE(r.objects.empty());
  c.write(std::span(&r, 1));
  r.ok = false, r.error_kind = "corrupt", r.error = "JPEG: premature end", r.tags.clear(),
  r.objects.clear();
  r.size += 1;
  c.write(std::span(&r, 1));
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of({r}));
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM objects"), "0\n");
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM tags"), "0\n");
}

TEST(Catalog, ModelsKeepTheirOwnRecords) {
  TempDir dir("catalog");
  Catalog c(dir.file("tags.sqlite"));
  FileRecord a = synthetic_record(2, 0, "centernet"), b = synthetic_record(2, 1, "mobilenet");
  c.write(std::vector{a, b});
  ASSERT_EQ(c.records("centernet").size(), 1u);
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of({a}));
  EXPECT_EQ(contents_of(c.records("mobilenet")), contents_of({b}));
}

TEST(Catalog, FailedBatchStoresNothingAndTheNextOneWorks) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  Catalog c(path);
  auto first = synthetic_records(10, 0);
  c.write(first);
  // SQLite stores NaN as NULL, which the schema refuses: an error from SQLite
  // itself, mid-batch, after rows of the batch were already written.
  auto batch = synthetic_records(20, 1);
  batch[4].tags = {{"dog", std::numeric_limits<float>::quiet_NaN()}};
  expect_error([&] { c.write(batch); }, {path, "sqlite: write tag", "NOT NULL"});
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(first)));
  batch[4].model_id = "";  // refused before SQL
  batch[4].tags.clear();
  expect_error([&] { c.write(batch); }, {path, "needs a path and a model id"});
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(first)));
  batch[4].model_id = "centernet";
  c.write(batch);
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(batch)));
}

TEST(Catalog, BadObjectsStoreNothing) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  Catalog c(path);
  auto first = synthetic_records(10, 0);
  c.write(first);
  auto batch = synthetic_records(20, 1);
  // A NaN box corner: SQLite's NOT NULL refuses it after the batch's other
  // rows (and this file's tags) were written.
  ASSERT_FALSE(batch[7].objects.empty());
  batch[7].objects.back().box.y2 = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { c.write(batch); }, {path, "sqlite: write object", "NOT NULL"});
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(first)));
  EXPECT_EQ(sqlite3_cli(path, "SELECT count(*) FROM objects"),
            fmt::format("{}\n", total_objects(first)));
  batch[7] = synthetic_record(7, 1);
  // A failed file's record with an object is refused: no object row ever
  // belongs to a file that failed.
  ASSERT_FALSE(batch[5].ok);
  batch[5].objects.push_back({"dog", 0.9f, Box{1, 2, 3, 4}});
  expect_error([&] { c.write(batch); }, {path, "failed file", batch[5].path});
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(first)));
  batch[5].objects.clear();
  c.write(batch);
  EXPECT_EQ(contents_of(c.records("centernet")), contents_of(sorted_by_path(batch)));
  EXPECT_EQ(sqlite3_cli(path,
                        "SELECT count(*) FROM objects o JOIN files f ON f.id = o.file_id "
                        "WHERE f.status = 'failed'"),
            "0\n");
}

TEST(Catalog, ReopenedCatalogHasEverything) {
  TempDir dir("catalog");
  std::string path = dir.file("tags.sqlite");
  auto records = synthetic_records(30, 0);
  { Catalog(path).write(records); }
  Catalog again(path);
  EXPECT_EQ(contents_of(again.records("centernet")), contents_of(sorted_by_path(records)));
  EXPECT_TRUE(again.up_to_date(records[3].path, records[3].size, records[3].mtime_ns, "centernet"));
}

TEST(Catalog, RefusesOtherSqliteFilesAndNonDatabases) {
  TempDir dir("catalog");
  std::string other = dir.file("other.sqlite");
  int status = 0;
  capture_command("sqlite3 " + shell_quote(other) + " 'CREATE TABLE photos (name TEXT)'", &status);
  ASSERT_EQ(status, 0);
  expect_error([&] { Catalog c(other); }, {other, "not a tandem catalog"});
  EXPECT_EQ(sqlite3_cli(other, "PRAGMA journal_mode"), "delete\n");  // left as it was

  std::string text = dir.write("notes.txt", std::string(4096, 'x'));
  expect_error([&] { Catalog c(text); }, {text, "sqlite: "});

  std::string newer = dir.file("newer.sqlite");
  { Catalog c(newer); }
  const int future = Catalog::kSchemaVersion + 1;
  sqlite3_cli(newer, fmt::format("PRAGMA user_version = {}", future));
  expect_error([&] { Catalog c(newer); },
               {newer, fmt::format("schema version {} is newer", future), "use a newer tandem"});
  EXPECT_EQ(sqlite3_cli(newer, "PRAGMA user_version"),
            fmt::format("{}\n", future));  // left as it was

  // A negative version (user_version is any 32-bit integer) indexes no
  // migration: refused, not used to pick one.
  sqlite3_cli(newer, "PRAGMA user_version = -251");
  expect_error([&] { Catalog c(newer); }, {newer, "schema version -251 is not one tandem writes"});
}

TEST(Catalog, FileStampIsSizeAndNanosecondMtime) {
  TempDir dir("catalog");
  std::string photo = dir.write("a.jpg", "12345");
  timespec times[2] = {{1700000000, 123456789}, {1600000000, 987654321}};
  ASSERT_EQ(::utimensat(AT_FDCWD, photo.c_str(), times, 0), 0);
  FileStamp s = file_stamp(photo);
  EXPECT_EQ(s.size, 5);
  EXPECT_EQ(s.mtime_ns, 1600000000987654321);
  expect_error([&] { file_stamp(dir.file("missing.jpg")); }, {"missing.jpg", "cannot stat"});
  expect_error([&] { file_stamp(dir.path().string()); }, {"not a regular file"});
}

namespace tandem::testing {
namespace {

// ANALYZE runs on a catalog without statistics and again once it has
// doubled, not at every run (sqlite3's own reading of sqlite_stat1).
TEST(Catalog, StatisticsAreRefreshedWhenTheCatalogDoubles) {
  TempDir dir("catalog_stats");
  const std::string path = dir.file("c.sqlite");
  auto stat = [&] { return sqlite3_cli(path, "SELECT stat FROM sqlite_stat1 WHERE idx = 'files_by_model'"); };
  pipeline::Catalog c(path);
  c.write(synthetic_records(10, 0));
  c.refresh_statistics();
  EXPECT_EQ(stat().substr(0, 3), "10 ");
  std::vector<pipeline::FileRecord> more;
  for (int i = 10; i < 15; ++i) more.push_back(synthetic_record(i, 0));
  c.write(more);
  c.refresh_statistics();
  EXPECT_EQ(stat().substr(0, 3), "10 ") << "15 files are not twice 10: no new ANALYZE";
  more.clear();
  for (int i = 15; i < 25; ++i) more.push_back(synthetic_record(i, 0));
  c.write(more);
  c.refresh_statistics();
  EXPECT_EQ(stat().substr(0, 3), "25 ");
}

}  // namespace
}  // namespace tandem::testing
