// The gallery's pages (gallery/catalog_view.h) against the plainest
// reference: every photo of a synthetic catalog, filtered and sorted in
// memory. Paging with cursors must list each matching photo exactly once,
// in order, for every filter, also while photos are added between pages.
// Each test runs on a SQLite catalog and on a PostgreSQL one (the server
// tests/postgres_server.py starts for `ctest -R catalog.postgres`; without
// it those skip).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "catalog_test_util.h"
#include "core/error.h"
#include "gallery/catalog_view.h"
#include "gallery/photo_query.h"
#include "pipeline/sql.h"
#include "postgres_test_util.h"

namespace tandem::testing {
namespace {

using gallery::CatalogView;
using gallery::PhotoQuery;
using gallery::QueryParams;
using nlohmann::json;

// Record i: synthetic_record plus EXIF a third of them lack, dates with
// ties (several photos in the same second), two cameras, and positions.
pipeline::FileRecord record(int i) {
  pipeline::FileRecord r = synthetic_record(i, 0);
  if (!r.ok || i % 3 == 0) return r;
  r.meta.taken_at = fmt::format("20{:02d}-{:02d}-0{}T12:00:0{}", 10 + i % 9, 1 + i % 12, 1 + i % 3, i % 2);
  r.meta.make = i % 2 ? "Canon" : "NIKON";
  r.meta.model = i % 2 ? "EOS 5D" : "D750";
  if (i % 4 == 1) r.meta.latitude = 40.0 + i % 10, r.meta.longitude = -3.0 + i % 7;
  return r;
}

struct Expected {
  int64_t id;
  std::string taken_at;
};

// Every photo the filter admits, in the gallery's order: newest date first
// (ties: larger id first), then undated, larger id first.
std::vector<int64_t> reference(const std::vector<pipeline::FileRecord>& rs, const std::vector<int64_t>& ids,
                               const std::function<bool(const pipeline::FileRecord&)>& keep, bool undated) {
  std::vector<Expected> dated, none;
  for (size_t k = 0; k < rs.size(); ++k) {
    if (!keep(rs[k])) continue;
    (rs[k].meta.taken_at.empty() ? none : dated).push_back({ids[k], rs[k].meta.taken_at});
  }
  std::sort(dated.begin(), dated.end(),
            [](const Expected& a, const Expected& b) { return std::tie(a.taken_at, a.id) > std::tie(b.taken_at, b.id); });
  std::sort(none.begin(), none.end(), [](const Expected& a, const Expected& b) { return a.id > b.id; });
  std::vector<int64_t> out;
  for (const Expected& e : dated) out.push_back(e.id);
  if (undated)
    for (const Expected& e : none) out.push_back(e.id);
  return out;
}

std::vector<int64_t> all_pages(CatalogView& v, QueryParams params) {
  std::vector<int64_t> ids;
  params.emplace("limit", "7");
  std::string cursor;
  for (int guard = 0; guard < 1000; ++guard) {
    QueryParams p = params;
    if (!cursor.empty()) p.emplace("cursor", cursor);
    json page = v.photos(gallery::parse_photo_query(p));
    for (const json& ph : page["photos"]) ids.push_back(ph["id"].get<int64_t>());
    if (page["next"].is_null()) return ids;
    cursor = page["next"].get<std::string>();
  }
  ADD_FAILURE() << "paging did not end";
  return ids;
}

class GalleryQuery : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      TANDEM_REQUIRE_POSTGRES();
      path_ = fresh_test_database("gallery_query");
    }
    pipeline::Catalog c(path_);
    for (int i = 0; i < 120; ++i) records_.push_back(record(i));
    c.write(records_);
    // Three people's faces, some twice in a photo; two of them named.
    std::vector<pipeline::FileRecord> faces;
    for (int i = 200; i < 260; ++i) {
      pipeline::FileRecord r = record(i);
      if (!r.ok) continue;
      r.faces = {face_of(i % 3, i, 10)};
      if (i % 5 == 0) r.faces.push_back(face_of(i % 3, i + 1000, 400));
      faces.push_back(std::move(r));
    }
    c.write_and_assign(faces);
    for (const pipeline::FileRecord& r : faces) person_of_[r.path] = r.faces[0].person_id;
    const int64_t alice = faces[0].faces[0].person_id, alison = faces[1].faces[0].person_id;
    c.name_person(alice, "Alice Smith");
    c.name_person(alison, "Bob Alison");
    names_[alice] = "Alice Smith", names_[alison] = "Bob Alison";
    for (pipeline::FileRecord& r : faces) records_.push_back(std::move(r));
    // Ids as the catalog gave them (a path is unique per model).
    std::unique_ptr<pipeline::sql::Database> db = pipeline::sql::open_for_reading(path_);
    pipeline::sql::Statement s(*db, "SELECT path, id FROM files", "read ids");
    while (s.step()) by_path_[s.text(0)] = s.int64(1);
    for (const auto& r : records_) ids_.push_back(by_path_.at(r.path));
  }

  TempDir dir_{"gallery_query"};
  std::string path_ = (dir_.path() / "c.sqlite").string();
  std::vector<pipeline::FileRecord> records_;
  std::vector<int64_t> ids_;
  std::map<std::string, int64_t> by_path_;
  std::map<std::string, int64_t> person_of_;  // by path: the person of a photo's faces
  std::map<int64_t, std::string> names_;

  int64_t person_named(const std::string& name) const {
    for (const auto& [id, n] : names_)
      if (n == name) return id;
    return 0;
  }
  // A search word as the gallery means it: part of the path, the start of
  // a label, or the start of a word of a person's name (ASCII case folded).
  bool matches_word(const pipeline::FileRecord& r, const std::string& word) const {
    auto lower = [](std::string t) {
      for (char& ch : t)
        if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
      return t;
    };
    const std::string w = lower(word);
    if (lower(r.path).find(w) != std::string::npos) return true;
    for (const pipeline::TagScore& t : r.tags)
      if (lower(t.label).rfind(w, 0) == 0) return true;
    auto p = person_of_.find(r.path);
    if (p == person_of_.end() || !names_.count(p->second)) return false;
    const std::string name = " " + lower(names_.at(p->second));
    return name.find(" " + w) != std::string::npos;
  }
};

INSTANTIATE_TEST_SUITE_P(Catalogs, GalleryQuery, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(GalleryQuery, EveryFilterPagesLikeTheReference) {
  CatalogView v(path_, "");
  ASSERT_EQ(v.model(), "centernet");
  auto has_tag = [](const std::string& l) {
    return [l](const pipeline::FileRecord& r) {
      return std::any_of(r.tags.begin(), r.tags.end(), [&](const pipeline::TagScore& t) { return t.label == l; });
    };
  };
  struct Case {
    QueryParams params;
    std::function<bool(const pipeline::FileRecord&)> keep;
    bool undated;
  };
  const std::vector<Case> cases = {
      {{}, [](const pipeline::FileRecord&) { return true; }, true},
      {{{"tag", "dog"}}, has_tag("dog"), true},
      {{{"tag", "café"}}, has_tag("café"), true},
      {{{"tag", "nothing"}}, has_tag("nothing"), true},
      {{{"from", "2013-01"}, {"to", "2015-06"}},
       [](const pipeline::FileRecord& r) {
         return r.meta.taken_at >= "2013-01-01" && r.meta.taken_at < "2015-07-01";
       },
       false},
      {{{"make", "Canon"}, {"model", "EOS 5D"}},
       [](const pipeline::FileRecord& r) { return r.meta.make == "Canon"; },
       true},
      {{{"box", "42,-3,45.5,1"}},
       [](const pipeline::FileRecord& r) {
         return r.meta.latitude && *r.meta.latitude >= 42 && *r.meta.latitude <= 45.5 && *r.meta.longitude >= -3 &&
                *r.meta.longitude <= 1;
       },
       true},
      {{{"tag", "dog"}, {"box", "40,-3,49,3"}},
       [&](const pipeline::FileRecord& r) {
         return has_tag("dog")(r) && r.meta.latitude && *r.meta.latitude <= 49 && *r.meta.longitude <= 3;
       },
       true},
      {{{"tag", "dog"}, {"from", "2013-01"}, {"to", "2015-06"}},
       [&](const pipeline::FileRecord& r) {
         return has_tag("dog")(r) && r.meta.taken_at >= "2013-01-01" &&
                r.meta.taken_at < "2015-07-01";
       },
       false},
      {{{"q", "ürlaub"}},
       [](const pipeline::FileRecord&) { return false; },
       true},  // LIKE folds ASCII only
      {{{"q", "ÜRLAUB"}},
       [](const pipeline::FileRecord& r) { return r.path.find("Ürlaub") != std::string::npos; },
       true},
      {{{"q", "Ürlaub dog"}},
       [&](const pipeline::FileRecord& r) {
         return r.path.find("Ürlaub") != std::string::npos && has_tag("dog")(r);
       },
       true},
      {{{"person", std::to_string(person_named("Alice Smith"))}},
       [&](const pipeline::FileRecord& r) {
         return person_of_.count(r.path) && person_of_.at(r.path) == person_named("Alice Smith");
       },
       true},
      {{{"person", std::to_string(person_named("Bob Alison"))},
        {"from", "2013-01"},
        {"to", "2015-06"}},
       [&](const pipeline::FileRecord& r) {
         return person_of_.count(r.path) && person_of_.at(r.path) == person_named("Bob Alison") &&
                r.meta.taken_at >= "2013-01-01" && r.meta.taken_at < "2015-07-01";
       },
       false},
      {{{"tag", "dog"}, {"person", std::to_string(person_named("Alice Smith"))}},
       [&](const pipeline::FileRecord& r) {
         return has_tag("dog")(r) && person_of_.count(r.path) &&
                person_of_.at(r.path) == person_named("Alice Smith");
       },
       true},
      {{{"q", "alice"}},
       [&](const pipeline::FileRecord& r) { return matches_word(r, "alice"); },
       true},
      {{{"q", "ali"}}, [&](const pipeline::FileRecord& r) { return matches_word(r, "ali"); }, true},
      {{{"q", "ali dog"}},
       [&](const pipeline::FileRecord& r) {
         return matches_word(r, "ali") && matches_word(r, "dog");
       },
       true},
      {{{"q", "alison"}, {"make", "Canon"}, {"model", "EOS 5D"}},
       [&](const pipeline::FileRecord& r) {
         return matches_word(r, "alison") && r.meta.make == "Canon";
       },
       true},
      {{{"q", "roll3 traf"}},
       [&](const pipeline::FileRecord& r) {
         return r.path.find("roll3") != std::string::npos &&
                std::any_of(r.tags.begin(), r.tags.end(), [](const auto& t) { return t.label.rfind("traf", 0) == 0; });
       },
       true},
  };
  // Walked along an index or driven by a filter's own: the same pages.
  for (CatalogView::Plan plan : {CatalogView::Plan::choose, CatalogView::Plan::walk,
                                 CatalogView::Plan::drive, CatalogView::Plan::dated_filter}) {
    v.set_plan(plan);
    for (const Case& c : cases) {
      std::string what = "plan " + std::to_string(int(plan)) + ": ";
      for (const auto& [k, val] : c.params) what += k + "=" + val + " ";
      EXPECT_EQ(all_pages(v, c.params), reference(records_, ids_, c.keep, c.undated)) << what;
    }
  }
}

// A filter's counts choose its plan once: the next page and the same
// page again reuse them, until another connection commits.
TEST_P(GalleryQuery, CountsAreKeptUntilTheCatalogChanges) {
  CatalogView v(path_, "centernet");
  const QueryParams q{{"tag", "dog"}, {"make", "Canon"}, {"model", "EOS 5D"}, {"limit", "3"}};
  const json first = v.photos(gallery::parse_photo_query(q));
  EXPECT_EQ(v.counts_run(), 2) << "the tag and the camera";
  ASSERT_FALSE(first["next"].is_null());
  QueryParams next = q;
  next.emplace("cursor", first["next"].get<std::string>());
  const json second = v.photos(gallery::parse_photo_query(next));
  EXPECT_EQ(v.photos(gallery::parse_photo_query(q)), first);
  EXPECT_EQ(v.counts_run(), 2);
  EXPECT_NE(second, first);
  v.photos(gallery::parse_photo_query({{"tag", "cat"}, {"make", "Canon"}, {"model", "EOS 5D"}}));
  EXPECT_EQ(v.counts_run(), 3) << "the camera's count is kept";
  v.keep_counts_after_change(std::chrono::milliseconds(0));
  {
    pipeline::Catalog c(path_);
    const std::vector<pipeline::FileRecord> more = {record(600), record(601)};
    c.write(more);
  }
  EXPECT_EQ(v.photos(gallery::parse_photo_query(q))["photos"].size(), 3u);
  EXPECT_EQ(v.counts_run(), 5) << "counted again after a commit";
}

// A word's people are read once, and again once a name changes.
TEST_P(GalleryQuery, ANewNameIsFoundAtOnce) {
  CatalogView v(path_, "centernet");
  const QueryParams q{{"q", "zed"}, {"limit", "200"}};
  EXPECT_TRUE(v.photos(gallery::parse_photo_query(q))["photos"].empty());
  const int64_t bob = person_named("Bob Alison");
  {
    pipeline::Catalog c(path_);
    c.name_person(bob, "Zed Alison");
  }
  std::vector<int64_t> got;
  const json page = v.photos(gallery::parse_photo_query(q));
  for (const json& p : page["photos"]) got.push_back(p["id"]);
  std::vector<int64_t> want;
  for (const auto& [path, person] : person_of_)
    if (person == bob) want.push_back(by_path_.at(path));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

TEST_P(GalleryQuery, PagesStayExactWhilePhotosAreAdded) {
  CatalogView v(path_, "centernet");
  QueryParams first{{"limit", "10"}};
  json page = v.photos(gallery::parse_photo_query(first));
  std::vector<int64_t> seen;
  for (const json& ph : page["photos"]) seen.push_back(ph["id"]);
  // Photos added now sort before and after the cursor; the next pages show
  // exactly those after it, none twice.
  {
    pipeline::Catalog c(path_);
    std::vector<pipeline::FileRecord> more;
    for (int i = 500; i < 530; ++i) more.push_back(record(i));
    c.write(more);
  }
  std::string cursor = page["next"];
  for (;;) {
    QueryParams p{{"limit", "10"}, {"cursor", cursor}};
    page = v.photos(gallery::parse_photo_query(p));
    for (const json& ph : page["photos"]) seen.push_back(ph["id"]);
    if (page["next"].is_null()) break;
    cursor = page["next"];
  }
  std::set<int64_t> unique(seen.begin(), seen.end());
  EXPECT_EQ(unique.size(), seen.size()) << "a photo was listed twice";
  for (int64_t id : ids_) EXPECT_TRUE(unique.count(id)) << "photo " << id << " was skipped";
}

// Numbers equal to a float's precision (PostgreSQL keeps a REAL as 4 bytes
// and prints it shortest; SQLite as the double of the float), the rest
// exactly.
void expect_same_json(const json& a, const json& b, const std::string& where) {
  if (a.is_number_float() || b.is_number_float()) {
    ASSERT_TRUE(a.is_number() && b.is_number()) << where << ": " << a << " against " << b;
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::abs(x - y), 1e-6 * std::max(1.0, std::abs(x))) << where << ": " << x << " against " << y;
  } else if (a.is_object() && b.is_object()) {
    EXPECT_EQ(a.size(), b.size()) << where << ": " << a.dump() << " against " << b.dump();
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << where << ": no " << it.key();
      expect_same_json(it.value(), b[it.key()], where + "." + it.key());
    }
  } else if (a.is_array() && b.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << where << ": " << a.dump() << " against " << b.dump();
    for (size_t i = 0; i < a.size(); ++i) expect_same_json(a[i], b[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

// The same writes to a SQLite catalog and to a PostgreSQL one: every
// answer of the API is the same (the summary, each photo with its objects,
// faces and metadata, the people, the duplicate groups, a few searches).
TEST(GalleryOnPostgres, AnswersAsOnSqlite) {
  TANDEM_REQUIRE_POSTGRES();
  TempDir dir("gallery_postgres");
  const std::vector<std::string> catalogs = {(dir.path() / "c.sqlite").string(), fresh_test_database("gallery_same")};
  for (const std::string& where : catalogs) {
    pipeline::Catalog c(where);
    std::vector<pipeline::FileRecord> rs;
    for (int i = 0; i < 60; ++i) rs.push_back(record(i));
    for (int i : {4, 7, 7}) {  // copies: the same content under other names
      pipeline::FileRecord copy = record(i);
      copy.path += fmt::format(".copy{}.jpg", rs.size());
      rs.push_back(copy);
    }
    c.write(rs);
    std::vector<pipeline::FileRecord> faces = {photo(100, {face_of(1, 0, 10), face_of(2, 0, 400)}),
                                               photo(101, {face_of(1, 1, 50)}), photo(102, {face_of(3, 0, 80)})};
    faces[0].meta.taken_at = "2021-06-01T10:00:00";
    c.write_and_assign(faces);
    c.name_person(faces[0].faces[0].person_id, "Alice Smith");
  }
  CatalogView sqlite(catalogs[0], ""), postgres(catalogs[1], "");
  json a = sqlite.summary(), b = postgres.summary();
  expect_same_json(a, b, "summary");
  const json all = sqlite.photos(gallery::parse_photo_query({{"limit", "200"}}));
  for (const json& p : all["photos"]) {
    const int64_t id = p["id"].get<int64_t>();
    expect_same_json(sqlite.photo(id), postgres.photo(id), "photo " + std::to_string(id));
  }
  expect_same_json(sqlite.people(), postgres.people(), "people");
  expect_same_json(sqlite.duplicates(std::nullopt, 30), postgres.duplicates(std::nullopt, 30), "duplicates");
  for (QueryParams q : std::vector<QueryParams>{{{"q", "alice"}}, {{"q", "roll2 dog"}}, {{"person", "1"}},
                                                {{"tag", "cat"}, {"from", "2012-01"}}, {{"make", "NIKON"}}}) {
    q.emplace("limit", "200");
    expect_same_json(sqlite.photos(gallery::parse_photo_query(q)), postgres.photos(gallery::parse_photo_query(q)),
                     "photos?" + q.begin()->first + "=" + q.begin()->second);
  }
  EXPECT_GE(a["photos"].get<int64_t>(), 66);
  EXPECT_EQ(sqlite.duplicates(std::nullopt, 30)["groups"].size(), 2u);
}

// A count stops one past the most matches that may still drive: every
// count below the limit can drive, the limit itself cannot.
TEST(GalleryQueryPlan, CountsOnlyAsFarAsTheChoiceToDrive) {
  EXPECT_EQ(gallery::drive_count_limit(1'000'000), 8001);
  EXPECT_EQ(gallery::drive_count_limit(0), 1);
  EXPECT_EQ(gallery::drive_count_limit(int64_t(1) << 40), gallery::kDriveCountCap + 1);
  for (int64_t photos : std::vector<int64_t>{1, 2, 99, 100, 12345, 999'999, 6'250'000, 7'000'000,
                                             int64_t(1) << 33}) {
    const int64_t limit = gallery::drive_count_limit(photos);
    EXPECT_TRUE(gallery::should_drive(limit - 1, photos)) << photos;
    EXPECT_FALSE(gallery::should_drive(limit, photos)) << photos;
  }
}

TEST(GalleryQueryParams, RefusesWhatItCannotMean) {
  auto bad = [](QueryParams p) { EXPECT_THROW(gallery::parse_photo_query(p), Error); };
  bad({{"limit", "0"}});
  bad({{"limit", "201"}});
  bad({{"limit", "ten"}});
  bad({{"person", "0"}});
  bad({{"from", "2021-13"}});
  bad({{"from", "2021-02-32"}});
  bad({{"to", "21-01"}});
  bad({{"box", "1,2,3"}});
  bad({{"box", "10,0,5,1"}});  // south above north
  bad({{"box", "inf,0,1,1"}});
  bad({{"cursor", "x.1"}});
  bad({{"cursor", "d.1.'; DROP TABLE files"}});
  bad({{"tag", std::string(300, 'a')}});
  bad({{"tag", "a"}, {"tag", "b"}});
  bad({{"sort", "id"}});
  QueryParams ok{{"from", "2021-12"}, {"to", "2021-12"}, {"q", "  a  b "}, {"limit", "200"}};
  PhotoQuery q = gallery::parse_photo_query(ok);
  EXPECT_EQ(q.filter.from, "2021-12-01");
  EXPECT_EQ(q.filter.to, "2022-01-01");  // the month included
  EXPECT_EQ(q.filter.words, (std::vector<std::string>{"a", "b"}));
  for (const gallery::Cursor& c : {gallery::Cursor{true, "2021-07-04T12:00:00", 17}, gallery::Cursor{false, "", 3}}) {
    gallery::Cursor back = gallery::decode_cursor(gallery::encode_cursor(c));
    EXPECT_EQ(back.dated, c.dated);
    EXPECT_EQ(back.taken_at, c.taken_at);
    EXPECT_EQ(back.id, c.id);
  }
  EXPECT_EQ(gallery::like_escape("50%_off\\"), "50\\%\\_off\\\\");
}

}  // namespace
}  // namespace tandem::testing
