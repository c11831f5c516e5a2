// The SQLite catalog: what goes in comes out (read back through the
// Catalog, and through the stock sqlite3 tool as the outside reference),
// re-run skipping, replacement of changed files, all-or-nothing batches,
// and refusing files that are not tandem catalogs.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

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

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

int64_t total_tags(const std::vector<FileRecord>& records) {
  int64_t n = 0;
  for (const auto& r : records) n += int64_t(r.tags.size());
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
            "wal\n1\nok\n");
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
  capture_command("sqlite3 " + shell_quote(newer) + " 'PRAGMA user_version = 2'", &status);
  ASSERT_EQ(status, 0);
  expect_error([&] { Catalog c(newer); }, {newer, "schema version 2 is newer"});
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
