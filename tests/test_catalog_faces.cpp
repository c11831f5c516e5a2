// Faces and people in the catalog: incremental assignment, what survives a
// photo tagged again and a re-cluster, and the people commands. Descriptors
// are synthetic: a person is a random direction in 1024 dimensions (random
// directions are nearly orthogonal: cosine distance about 1), each face of
// them that direction plus noise (cosine distance about 0.05 from it). The
// sqlite3 command-line tool reads what was written.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "catalog_test_util.h"
#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/people.h"

using namespace tandem;
using namespace tandem::pipeline;
using namespace tandem::testing;

namespace {

std::map<std::string, std::vector<int64_t>> people_by_path(Catalog& c) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const FileRecord& r : c.records("centernet"))
    for (const FaceRecord& f : r.faces) out[r.path].push_back(f.person_id);
  return out;
}

}  // namespace

TEST(CatalogFaces, FacesOfOnePersonJoinOnePersonAcrossPhotos) {
  TempDir dir("faces");
  Catalog c(dir.file("c.sqlite"));
  c.write(std::vector<FileRecord>{photo(1, {face_of(1, 0, 0), face_of(2, 0, 300)}), photo(2, {face_of(2, 1, 0)})});
  c.write(std::vector<FileRecord>{photo(3, {face_of(1, 2, 50), face_of(3, 0, 300)})});
  auto p = people_by_path(c);
  ASSERT_EQ(p.size(), 3u);
  const int64_t alice = p["/photos/faces/001.jpg"][0], bob = p["/photos/faces/001.jpg"][1];
  EXPECT_NE(alice, bob);
  EXPECT_EQ(p["/photos/faces/002.jpg"], std::vector<int64_t>{bob});
  EXPECT_EQ(p["/photos/faces/003.jpg"][0], alice);
  const int64_t carol = p["/photos/faces/003.jpg"][1];
  EXPECT_NE(carol, alice);
  EXPECT_NE(carol, bob);
  const std::vector<PersonSummary> people = c.people();
  ASSERT_EQ(people.size(), 3u);
  EXPECT_EQ(people[0].faces, 2);  // most faces first
  // What was written reads back: landmarks, descriptor bits, estimates.
  for (const FileRecord& r : c.records("centernet")) {
    if (r.path != "/photos/faces/001.jpg") continue;
    const FaceRecord want = face_of(1, 0, 0);
    EXPECT_EQ(r.faces[0].descriptor, want.descriptor);
    EXPECT_EQ(r.faces[0].landmarks, want.landmarks);
    EXPECT_FLOAT_EQ(r.faces[0].age, want.age);
  }
  EXPECT_EQ(sqlite3_cli(c.path(), "SELECT count(*), count(DISTINCT person_id), sum(length(descriptor)) FROM faces"),
            fmt::format("5|3|{}\n", 5 * 1024 * 4));
}

TEST(CatalogFaces, NamesSurviveRetaggingAndReclustering) {
  TempDir dir("faces");
  Catalog c(dir.file("c.sqlite"));
  c.write(std::vector<FileRecord>{photo(1, {face_of(1, 0, 0)}), photo(2, {face_of(1, 1, 0), face_of(2, 0, 300)})});
  const int64_t alice = people_by_path(c)["/photos/faces/001.jpg"][0];
  c.name_person(alice, "Alice");
  // Tagged again (--force, or the file changed): the same faces, a little moved.
  c.write(std::vector<FileRecord>{photo(1, {face_of(1, 3, 5)})});
  EXPECT_EQ(people_by_path(c)["/photos/faces/001.jpg"][0], alice);
  EXPECT_GE(c.recluster(), 2);
  auto p = people_by_path(c);
  EXPECT_EQ(p["/photos/faces/001.jpg"][0], alice);
  EXPECT_EQ(p["/photos/faces/002.jpg"][0], alice);
  for (const FileRecord& r : c.records("centernet"))
    for (const FaceRecord& f : r.faces) {
      if (f.person_id == alice) {
        EXPECT_EQ(f.person_name, "Alice");
      }
    }
  EXPECT_EQ(sqlite3_cli(c.path(), "SELECT DISTINCT name FROM photo_people WHERE name IS NOT NULL"), "Alice\n");
  EXPECT_THROW(c.name_person(p["/photos/faces/002.jpg"][1], "Alice"), Error);  // names are unique
}

TEST(CatalogFaces, MergeSplitAndForget) {
  TempDir dir("faces");
  Catalog c(dir.file("c.sqlite"));
  c.write(std::vector<FileRecord>{photo(1, {face_of(1, 0, 0)}), photo(2, {face_of(2, 0, 0)}),
                                  photo(3, {face_of(3, 0, 0)})});
  auto p = people_by_path(c);
  const int64_t a = p["/photos/faces/001.jpg"][0], b = p["/photos/faces/002.jpg"][0],
                x = p["/photos/faces/003.jpg"][0];
  c.name_person(b, "Bob");
  c.merge_people(a, b);  // a keeps its id and takes b's name
  p = people_by_path(c);
  EXPECT_EQ(p["/photos/faces/002.jpg"][0], a);
  EXPECT_EQ(sqlite3_cli(c.path(), fmt::format("SELECT name, faces FROM people WHERE id = {}", a)), "Bob|2\n");
  EXPECT_THROW(c.merge_people(a, 999), Error);
  c.name_person(x, "Xavier");
  EXPECT_THROW(c.merge_people(a, x), Error);  // two names: the user must choose
  // Split Bob's second face off, then forget that new person.
  const int64_t face2 = std::stoll(sqlite3_cli(
      c.path(), "SELECT x.id FROM faces x JOIN files f ON f.id = x.file_id WHERE f.path LIKE '%002.jpg'"));
  const int64_t split = c.split_faces(std::vector<int64_t>{face2});
  EXPECT_NE(split, a);
  EXPECT_EQ(people_by_path(c)["/photos/faces/002.jpg"][0], split);
  c.forget_person(split);
  EXPECT_EQ(people_by_path(c)["/photos/faces/002.jpg"][0], 0);
  // A forgotten face stays unassigned when its photo is tagged again or the
  // library re-clustered.
  c.write(std::vector<FileRecord>{photo(2, {face_of(2, 1, 0)})});
  c.recluster();
  EXPECT_EQ(people_by_path(c)["/photos/faces/002.jpg"][0], 0);
  EXPECT_EQ(sqlite3_cli(c.path(), "PRAGMA foreign_key_check; PRAGMA integrity_check"), "ok\n");
}

TEST(CatalogFaces, ANewPhotoMovesNoOneElse) {
  TempDir dir("faces");
  Catalog c(dir.file("c.sqlite"));
  std::vector<FileRecord> first;
  for (int i = 0; i < 12; ++i) first.push_back(photo(i, {face_of(i % 4, i, 0)}));
  c.write(first);
  const auto before = people_by_path(c);
  c.write(std::vector<FileRecord>{photo(50, {face_of(9, 0, 0), face_of(2, 99, 300)})});
  auto after = people_by_path(c);
  for (const auto& [path, ids] : before) EXPECT_EQ(after[path], ids) << path;
  EXPECT_EQ(after["/photos/faces/050.jpg"][1], before.at("/photos/faces/002.jpg")[0]);
  EXPECT_EQ(c.people().size(), 5u);
}
