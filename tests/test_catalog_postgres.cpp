// The catalog on PostgreSQL, against the catalog on SQLite as the
// reference: the same batches written to both read back the same records,
// faces and people; a copy either way keeps everything; two connections
// (two workers) share one people index. The server is a real PostgreSQL
// that tests/postgres_server.py starts (initdb into a temporary folder, a
// unix socket) for `ctest -R catalog.postgres`; run alone, these skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "catalog_test_util.h"
#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/catalog_copy.h"
#include "pipeline/catalog_postgres.h"
#include "pipeline/people.h"
#include "pipeline/sql.h"
#include "postgres_test_util.h"

using namespace tandem;
using namespace tandem::pipeline;
using namespace tandem::testing;

namespace {

// Everything a catalog holds for the model, faces and people included.
std::vector<std::string> everything(Catalog& c) {
  std::vector<std::string> out;
  for (const FileRecord& r : c.records("centernet")) {
    std::string s = content_of(r);
    for (const FaceRecord& f : r.faces) {
      s += fmt::format("|face {:a} {:a},{:a},{:a},{:a} age {:a} g {:a} person {} '{}' confirmed {} n {} first {:a}",
                       f.score, f.box.x1, f.box.y1, f.box.x2, f.box.y2, f.age, f.gender_score, f.person_id,
                       f.person_name, f.confirmed, f.descriptor.size(), f.descriptor.empty() ? 0.f : f.descriptor[0]);
      for (const auto& p : f.landmarks) s += fmt::format(" {:a},{:a}", p[0], p[1]);
    }
    out.push_back(s);
  }
  for (const PersonSummary& p : c.people())
    out.push_back(fmt::format("person {} '{}' {} faces, best in {}", p.id, p.name, p.faces, p.photo));
  return out;
}

// The same writes, to any catalog: files in batches, some tagged again,
// faces of three people, a name, a merge.
void write_collection(Catalog& c) {
  std::vector<FileRecord> first = synthetic_records(30, 1);
  c.write(std::span(first).subspan(0, 16));
  c.write(std::span(first).subspan(16));
  std::vector<FileRecord> faces = {photo(100, {face_of(1, 0, 10), face_of(2, 0, 400)}),
                                   photo(101, {face_of(1, 1, 50)}), photo(102, {face_of(3, 0, 80)})};
  c.write_and_assign(faces);
  std::vector<FileRecord> again = {synthetic_record(4, 2), synthetic_record(9, 2), photo(101, {face_of(1, 2, 52)})};
  c.write_and_assign(again);
  c.name_person(faces[0].faces[0].person_id, "Alice");
  c.merge_people(faces[2].faces[0].person_id, faces[0].faces[1].person_id);
  c.add_roots(std::vector<std::string>{"/photos", "/photos/faces"});
}

TEST(CatalogOnPostgres, RecordsFacesAndPeopleMatchSqlite) {
  TANDEM_REQUIRE_POSTGRES();
  TempDir dir("catalog_pg");
  Catalog lite(dir.file("c.sqlite"));
  Catalog pg(fresh_test_database("records_match"));
  write_collection(lite);
  write_collection(pg);
  EXPECT_EQ(everything(pg), everything(lite));
  for (int i : {0, 4, 5, 29}) {
    FileRecord r = synthetic_record(i, i == 4 ? 2 : 1);
    EXPECT_EQ(pg.stored(r.path, r.size, r.mtime_ns, "centernet"), lite.stored(r.path, r.size, r.mtime_ns, "centernet"))
        << r.path;
    EXPECT_FALSE(pg.up_to_date(r.path, r.size + 1, r.mtime_ns, "centernet"));
  }
  EXPECT_EQ(pg.counts("centernet").ok, lite.counts("centernet").ok);
  EXPECT_EQ(pg.counts("centernet").failed, lite.counts("centernet").failed);
  EXPECT_EQ(pg.recluster(), lite.recluster());
  EXPECT_EQ(everything(pg), everything(lite));
}

// A batch travels to PostgreSQL as arrays in its text form (one per
// column): every character a path, a label or a camera string may hold,
// empty strings beside missing values, and the numbers read back exactly,
// also when a batch writes files again.
TEST(CatalogOnPostgres, BatchArraysKeepEveryCharacterAndEveryMissingValue) {
  TANDEM_REQUIRE_POSTGRES();
  TempDir dir("catalog_pg");
  Catalog lite(dir.file("c.sqlite"));
  Catalog pg(fresh_test_database("bulk_arrays"));
  const std::vector<std::string> odd = {"a\"b", "back\\slash", "{braces,comma}", "NULL", "", " lead and trail ",
                                        "Ürlaub 🌅", "new\nline", "tab\there", "'single'"};
  auto batch = [&](int version) {
    std::vector<FileRecord> out;
    for (size_t i = 0; i < odd.size(); ++i) {
      FileRecord r = synthetic_record(int(i) + 40, version);
      r.ok = true, r.error_kind.clear(), r.error.clear();
      r.path = "/odd/" + odd[i] + std::to_string(i) + ".jpg";
      r.tags = {{odd[i], 0.5f + 0.01f * float(version)}, {odd[(i + 1) % odd.size()], 1e-30f}};
      r.objects = {{odd[(i + 2) % odd.size()], 0.25f, {1.5f, 2.f / 3.f, 100.f, 1e6f}}};
      r.meta.make = odd[i];
      r.meta.lens = i % 2 ? odd[(i + 3) % odd.size()] : "";
      r.meta.taken_offset = i % 3 ? "+02:00" : "";
      if (i % 2) r.meta.exposure_s = 1.0 / 3.0;
      if (i % 3 == 0) r.meta.iso = int(100 * i);
      if (i % 4 == 1) r.meta.latitude = -33.8688197, r.meta.longitude = 151.2092955;
      out.push_back(std::move(r));
    }
    return out;
  };
  auto read = [](Catalog& c) {
    std::vector<std::string> out;
    for (const FileRecord& r : c.records("centernet")) {
      const image::PhotoMetadata& m = r.meta;
      out.push_back(content_of(r) + fmt::format("|{}|{}|{}|{}|{}|{}|{}|{}|{}", m.make, m.lens, m.taken_offset,
                                                m.exposure_s ? fmt::format("{:a}", *m.exposure_s) : "-",
                                                m.iso ? std::to_string(*m.iso) : "-",
                                                m.latitude ? fmt::format("{:a}", *m.latitude) : "-",
                                                m.longitude ? fmt::format("{:a}", *m.longitude) : "-",
                                                m.f_number ? "f" : "-", m.taken_at));
    }
    return out;
  };
  for (int version : {1, 2}) {
    std::vector<FileRecord> b = batch(version);
    lite.write(b);
    pg.write(b);
    EXPECT_EQ(read(pg), read(lite)) << "version " << version;
  }
  EXPECT_EQ(read(pg).size(), odd.size());
}

TEST(CatalogOnPostgres, CopiesBothWaysKeepEverything) {
  TANDEM_REQUIRE_POSTGRES();
  TempDir dir("catalog_pg");
  const std::string original = dir.file("original.sqlite"), back = dir.file("back.sqlite");
  const std::string url = fresh_test_database("copy_both_ways");
  std::vector<std::string> want;
  {
    Catalog c(original);
    write_collection(c);
    want = everything(c);
  }
  CopyCounts to_pg = copy_catalog(original, url);
  EXPECT_EQ(to_pg.files, 33);
  EXPECT_EQ(to_pg.faces, 4);
  EXPECT_EQ(to_pg.roots, 2);
  copy_catalog(url, back);
  {
    Catalog pg(url), lite(back);
    EXPECT_EQ(everything(pg), want);
    EXPECT_EQ(everything(lite), want);
    // New rows after a copy take new ids (the sequences moved past the
    // copied ones): a new person and a new file.
    std::vector<FileRecord> more = {photo(200, {face_of(9, 0, 10)})};
    pg.write_and_assign(more);
    EXPECT_GT(more[0].faces[0].person_id, 0);
    EXPECT_EQ(pg.counts("centernet").ok + pg.counts("centernet").failed, 34);
  }
  EXPECT_THROW(copy_catalog(original, url), Error) << "a destination with files is refused";
}

TEST(CatalogOnPostgres, TwoWorkersShareOnePeopleIndex) {
  TANDEM_REQUIRE_POSTGRES();
  const std::string url = fresh_test_database("two_workers");
  Catalog a(url), b(url);
  std::vector<FileRecord> one = {photo(1, {face_of(1, 0, 10)})};
  a.write_and_assign(one);
  std::vector<FileRecord> two = {photo(2, {face_of(1, 1, 20), face_of(2, 0, 400)})};
  b.write_and_assign(two);
  EXPECT_EQ(two[0].faces[0].person_id, one[0].faces[0].person_id) << "b found the person a made";
  std::vector<FileRecord> three = {photo(3, {face_of(2, 1, 30)})};
  a.write_and_assign(three);
  EXPECT_EQ(three[0].faces[0].person_id, two[0].faces[1].person_id) << "a found the person b made";
  EXPECT_EQ(a.people().size(), 2u);
}

TEST(CatalogOnPostgres, RefusesNewerSchemasAndOtherPrograms) {
  TANDEM_REQUIRE_POSTGRES();
  const std::string newer = fresh_test_database("newer_schema");
  { Catalog c(newer); }
  const std::string future = "UPDATE tandem_meta SET value = " + std::to_string(kPostgresSchemaVersion + 1) +
                             " WHERE key = 'schema_version'";
  sql::open_postgres(newer)->exec(future.c_str(), "pretend a newer tandem wrote it");
  try {
    Catalog c(newer);
    FAIL() << "a newer schema was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this tandem's"), std::string::npos) << e.what();
  }
  const std::string other = fresh_test_database("other_program");
  sql::open_postgres(other)->exec("CREATE TABLE files (id INTEGER)", "another program's table");
  EXPECT_THROW(Catalog{other}, Error);
}

// A batch's statements are pipelined: an error in one whose result nobody
// waited for (a tag the server refuses: bytes that are not UTF-8) still
// fails the batch at its next read or its commit, names the step, stores
// nothing of it, and leaves the connection fit for the next batch. So do a
// record the catalog refuses in the middle of a batch, and text with a NUL
// byte (which the driver refuses rather than cut short).
TEST(CatalogOnPostgres, AnErrorInAPipelinedBatchStoresNothingOfIt) {
  TANDEM_REQUIRE_POSTGRES();
  Catalog c(fresh_test_database("pipelined_errors"));
  std::vector<FileRecord> batch = synthetic_records(6, 1);
  batch[0].ok = true, batch[0].error_kind.clear(), batch[0].error.clear();
  batch[0].tags = {{"caf\xe9", 0.5f}};  // Latin-1
  try {
    c.write(batch);
    FAIL() << "a Latin-1 label was stored in a UTF-8 database";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("write tag"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.counts("centernet").ok + c.counts("centernet").failed, 0);
  std::vector<FileRecord> refused = synthetic_records(6, 1);
  refused[4].ok = false, refused[4].tags = {{"dog", 0.5f}};
  EXPECT_THROW(c.write(refused), Error);
  EXPECT_EQ(c.counts("centernet").ok + c.counts("centernet").failed, 0);
  std::vector<FileRecord> nul = synthetic_records(6, 1);
  nul[2].ok = true, nul[2].error_kind.clear(), nul[2].error.clear();
  nul[2].tags = {{std::string("bad\0label", 9), 0.5f}};
  EXPECT_THROW(c.write(nul), Error);
  EXPECT_EQ(c.counts("centernet").ok + c.counts("centernet").failed, 0);
  std::vector<FileRecord> good = synthetic_records(6, 1);
  c.write(good);
  EXPECT_EQ(c.counts("centernet").ok + c.counts("centernet").failed, 6);
  std::vector<std::string> want = contents_of(good), got = contents_of(c.records("centernet"));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(CatalogOnPostgres, AnUnreachableServerIsNamedWithoutItsPassword) {
  if (!sql::built_with_postgres()) GTEST_SKIP() << "built without libpq";
  TempDir dir("catalog_pg");
  const std::string url = "postgresql://alice:s3cret@/photos?host=" + dir.path().string() + "&connect_timeout=2";
  try {
    Catalog c(url);
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("postgresql: connect"), std::string::npos) << m;
    EXPECT_NE(m.find("postgresql://alice@/photos"), std::string::npos) << m;
    EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
  }
}

}  // namespace
