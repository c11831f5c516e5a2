// The catalog's faces and people: writing a photo's faces (each joins a
// person, pipeline/people.h), reading them back, and the people commands.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/sql.h"

namespace tandem::pipeline {

using sql::Statement;

namespace {

constexpr const char* kSelectFaces = R"sql(
SELECT x.file_id, x.score, x.x1, x.y1, x.x2, x.y2, x.landmarks, x.descriptor, x.age, x.gender_score,
       x.person_id, p.name, x.confirmed
FROM faces x JOIN files f ON f.id = x.file_id LEFT JOIN people p ON p.id = x.person_id
WHERE f.model_id = ?1 ORDER BY x.file_id, x.rank
)sql";

// A face stored before the photo was tagged again: where it was, whose it
// was, and how it got there.
struct OldFace {
  Box box;
  std::vector<float> unit;
  int64_t person = 0;
  bool confirmed = false, ignored = false;
  bool taken = false;
};

std::string landmarks_json(const FaceRecord& f) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : f.landmarks) j.push_back({p[0], p[1]});
  return j.dump();
}

void read_landmarks(const std::string& text, FaceRecord& f) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return;
  for (size_t k = 0; k < f.landmarks.size() && k < j.size(); ++k)
    if (j[k].is_array() && j[k].size() == 2 && j[k][0].is_number() && j[k][1].is_number())
      f.landmarks[k] = {j[k][0].get<float>(), j[k][1].get<float>()};
}

// The old face a new one is (IoU >= 0.5, each old face at most once), so a
// photo tagged again keeps whose faces they are and what a person confirmed.
OldFace* same_face(std::vector<OldFace>& old, const Box& box) {
  OldFace* best = nullptr;
  float best_iou = 0.5f;
  for (OldFace& o : old) {
    const float v = iou(o.box, box);
    if (!o.taken && v >= best_iou) best = &o, best_iou = v;
  }
  if (best) best->taken = true;
  return best;
}

}  // namespace

template <typename Body>
auto Catalog::in_transaction(const char* what, Body body) {
  db_->begin_write(what);
  try {
    load_people();
    auto result = body();
    flush_people();
    db_->commit(what);
    people_locked_ = false;
    return result;
  } catch (...) {
    db_->rollback_if_open();
    people_data_version_ = -1;  // the index may hold what was rolled back
    people_locked_ = false;
    throw;
  }
}

void Catalog::lock_people() {
  if (db_->dialect() != sql::Dialect::postgresql) return;  // SQLite's write transaction is exclusive
  // A transaction-scoped advisory lock: released by its commit or rollback,
  // also when a worker's connection dies.
  Statement s(*db_, "SELECT pg_advisory_xact_lock(7630411627066404209)", "lock people");
  Statement::Use use(s);
  s.step();
}

int64_t Catalog::people_version() {
  if (db_->dialect() == sql::Dialect::sqlite) return db_->query_int("PRAGMA data_version", "read data version");
  return db_->query_int("SELECT value FROM tandem_meta WHERE key = 'people_version'", "read people version");
}

void Catalog::load_people() {
  if (people_locked_) return;  // loaded in this transaction
  lock_people();
  people_locked_ = true;
  const int64_t version = people_version();
  if (version == people_data_version_) return;
  people_.clear();
  Statement s(*db_, "SELECT id, centroid, faces FROM people", "read people");
  while (s.step()) people_.set(s.int64(0), s.floats(1), s.int64(2));
  people_data_version_ = version;
}

int64_t Catalog::new_person() {
  Statement& s = *insert_person_;
  Statement::Use use(s);
  s.bind(1, std::span<const float>());  // an empty centroid: flush_people writes the sum
  s.bind(2, sql::utc_now());
  s.step();
  const int64_t id = s.int64(0);
  s.run();
  people_.set(id, {}, 0);
  return id;
}

void Catalog::flush_people() {
  if (!people_locked_) return;  // this transaction changed no one
  std::sort(dirty_people_.begin(), dirty_people_.end());
  dirty_people_.erase(std::unique(dirty_people_.begin(), dirty_people_.end()), dirty_people_.end());
  for (int64_t id : dirty_people_) {
    if (!people_.contains(id)) continue;
    Statement& s = *update_person_;
    Statement::Use use(s);
    s.bind(1, people_.sum(id));
    s.bind(2, people_.faces(id));
    s.bind(3, id);
    s.run_later();
  }
  dirty_people_.clear();
  // An unnamed person left without faces is gone; a named one stays.
  db_->exec("DELETE FROM people WHERE faces = 0 AND name IS NULL", "delete empty people");
  if (db_->dialect() == sql::Dialect::postgresql) {
    // Other workers see the change by the count, committed with it.
    people_data_version_ = db_->query_int(
        "UPDATE tandem_meta SET value = value + 1 WHERE key = 'people_version' RETURNING value", "count a change of people");
    return;
  }
  // Our own commit bumps no data_version of ours; another writer's does.
  people_data_version_ = db_->query_int("PRAGMA data_version", "read data version");
}

std::string Catalog::person_name(int64_t person) {
  Statement s(*db_, "SELECT name FROM people WHERE id = ?1", "read a name");
  s.bind(1, person);
  return s.step() ? s.text(0) : std::string();
}

std::vector<int64_t> Catalog::write_faces(int64_t file_id, const FileRecord& r, bool fresh) {
  std::vector<int64_t> assigned;
  std::vector<OldFace> old;
  if (!fresh) {
    Statement& s = *old_faces_;
    Statement::Use use(s);
    s.bind(1, file_id);
    while (s.step()) {
      OldFace o;
      o.box = {float(s.real(1)), float(s.real(2)), float(s.real(3)), float(s.real(4))};
      o.unit = unit_descriptor(s.floats(5));
      o.person = s.is_null(6) ? 0 : s.int64(6);
      o.confirmed = s.int64(7) != 0, o.ignored = s.int64(8) != 0;
      old.push_back(std::move(o));
    }
  }
  if (old.empty() && r.faces.empty()) return assigned;  // no one's faces change
  load_people();  // once a transaction
  for (const OldFace& o : old)
    if (o.person) people_.remove(o.person, o.unit), dirty_people_.push_back(o.person);
  {
    Statement::Use use(*delete_faces_);
    delete_faces_->bind(1, file_id);
    delete_faces_->run_later();
  }
  for (size_t rank = 0; rank < r.faces.size(); ++rank) {
    const FaceRecord& f = r.faces[rank];
    const std::vector<float> unit = unit_descriptor(f.descriptor);
    const OldFace* was = same_face(old, f.box);
    int64_t person = was && people_.contains(was->person) ? was->person : 0;
    const bool ignored = was && was->ignored;
    if (!person && !ignored) person = people_.nearest(unit);
    if (!person && !ignored) person = new_person();
    if (person) people_.add(person, unit), dirty_people_.push_back(person);
    assigned.push_back(person);
    Statement& s = *insert_face_;
    Statement::Use use(s);
    s.bind(1, file_id);
    s.bind(2, int64_t(rank));
    s.bind(3, double(f.score));
    s.bind(4, double(f.box.x1));
    s.bind(5, double(f.box.y1));
    s.bind(6, double(f.box.x2));
    s.bind(7, double(f.box.y2));
    s.bind(8, landmarks_json(f));
    s.bind(9, std::span<const float>(f.descriptor));
    s.bind(10, double(f.age));
    s.bind(11, double(f.gender_score));
    if (person) s.bind(12, person);
    s.bind(13, int64_t(was && was->confirmed && person == was->person));
    s.bind(14, int64_t(ignored));
    s.run_later();
  }
  return assigned;
}

void Catalog::read_faces(const std::string& model_id, std::vector<FileRecord>& out,
                         const std::unordered_map<int64_t, size_t>& index) {
  Statement s(*db_, kSelectFaces, "read faces");
  s.bind(1, model_id);
  while (s.step()) {
    FaceRecord f;
    f.score = float(s.real(1));
    f.box = {float(s.real(2)), float(s.real(3)), float(s.real(4)), float(s.real(5))};
    read_landmarks(s.text(6), f);
    f.descriptor = s.floats(7);
    f.age = float(s.real(8));
    f.gender_score = float(s.real(9));
    f.person_id = s.is_null(10) ? 0 : s.int64(10);
    f.person_name = s.text(11);
    f.confirmed = s.int64(12) != 0;
    out[index.at(s.int64(0))].faces.push_back(std::move(f));
  }
}

std::vector<PersonSummary> Catalog::people() {
  return sql::in_transaction(*db_, false, "read people", [&] {
    std::vector<PersonSummary> out;
    Statement s(*db_, R"sql(
SELECT p.id, p.name, p.faces, f.path, x.x1, x.y1, x.x2, x.y2
FROM people p
LEFT JOIN faces x ON x.id = (SELECT id FROM faces WHERE person_id = p.id ORDER BY score DESC, id LIMIT 1)
LEFT JOIN files f ON f.id = x.file_id
ORDER BY p.faces DESC, p.id
)sql", "list people");
    while (s.step()) {
      PersonSummary p;
      p.id = s.int64(0), p.name = s.text(1), p.faces = s.int64(2), p.photo = s.text(3);
      if (!s.is_null(4)) p.box = {float(s.real(4)), float(s.real(5)), float(s.real(6)), float(s.real(7))};
      out.push_back(std::move(p));
    }
    return out;
  });
}

namespace {

void require_person(sql::Database& db, int64_t id) {
  Statement s(db, "SELECT 1 FROM people WHERE id = ?1", "look up person");
  s.bind(1, id);
  check(s.step(), "no person " + std::to_string(id) + " in the catalog", ErrorContext{db.name(), "", "", ""});
}

std::string name_of(sql::Database& db, int64_t id) {
  Statement s(db, "SELECT name FROM people WHERE id = ?1", "read name");
  s.bind(1, id);
  return s.step() ? s.text(0) : std::string();
}

}  // namespace

void Catalog::name_person(int64_t person, const std::string& name) {
  in_transaction("name a person", [&] {
    require_person(*db_, person);
    if (!name.empty()) {
      Statement taken(*db_, "SELECT id FROM people WHERE name = ?1 AND id != ?2", "look up name");
      taken.bind(1, name);
      taken.bind(2, person);
      check(!taken.step(), "the name \"" + name + "\" belongs to person " + std::to_string(taken.int64(0)) +
                               " (merge the two instead)",
            ErrorContext{path(), "", "", ""});
    }
    Statement s(*db_, "UPDATE people SET name = ?1 WHERE id = ?2", "name a person");
    if (!name.empty()) s.bind(1, name);
    s.bind(2, person);
    s.run();
    // Naming a person accepts its faces: a re-cluster leaves them there.
    if (!name.empty()) {
      Statement c(*db_, "UPDATE faces SET confirmed = 1 WHERE person_id = ?1", "confirm faces");
      c.bind(1, person);
      c.run();
    }
    return 0;
  });
}

void Catalog::merge_people(int64_t into, int64_t from) {
  in_transaction("merge people", [&] {
    require_person(*db_, into);
    require_person(*db_, from);
    check(into != from, "a person cannot be merged into itself", ErrorContext{path(), "", "", ""});
    const std::string a = name_of(*db_, into), b = name_of(*db_, from);
    check(a.empty() || b.empty() || a == b,
          "people " + std::to_string(into) + " (\"" + a + "\") and " + std::to_string(from) + " (\"" + b +
              "\") have different names; remove one name first",
          ErrorContext{path(), "", "", ""});
    Statement move(*db_, "UPDATE faces SET person_id = ?1, confirmed = 1 WHERE person_id = ?2", "move faces");
    move.bind(1, into);
    move.bind(2, from);
    move.run();
    std::vector<float> sum(people_.sum(into).begin(), people_.sum(into).end());
    const std::span<const float> add = people_.sum(from);
    if (sum.size() < add.size()) sum.resize(add.size(), 0.f);
    for (size_t i = 0; i < add.size(); ++i) sum[i] += add[i];
    people_.set(into, std::move(sum), people_.faces(into) + people_.faces(from));
    dirty_people_.push_back(into);
    Statement del(*db_, "DELETE FROM people WHERE id = ?1", "delete merged person");
    del.bind(1, from);
    del.run();
    people_.erase(from);
    if (a.empty() && !b.empty()) {
      Statement n(*db_, "UPDATE people SET name = ?1 WHERE id = ?2", "keep the name");
      n.bind(1, b);
      n.bind(2, into);
      n.run();
    }
    return 0;
  });
}

int64_t Catalog::split_faces(std::span<const int64_t> face_ids) {
  return in_transaction("split faces", [&] {
    check(!face_ids.empty(), "no faces to split off", ErrorContext{path(), "", "", ""});
    const int64_t person = new_person();
    for (int64_t face : face_ids) {
      Statement s(*db_, "SELECT person_id, descriptor FROM faces WHERE id = ?1", "read face");
      s.bind(1, face);
      check(s.step(), "no face " + std::to_string(face) + " in the catalog", ErrorContext{path(), "", "", ""});
      const std::vector<float> unit = unit_descriptor(s.floats(1));
      if (!s.is_null(0)) people_.remove(s.int64(0), unit), dirty_people_.push_back(s.int64(0));
      people_.add(person, unit);
      Statement move(*db_, "UPDATE faces SET person_id = ?1, confirmed = 1, ignored = 0 WHERE id = ?2",
                     "move a face");
      move.bind(1, person);
      move.bind(2, face);
      move.run();
    }
    dirty_people_.push_back(person);
    return person;
  });
}

void Catalog::forget_person(int64_t person) {
  in_transaction("forget a person", [&] {
    require_person(*db_, person);
    Statement faces(*db_, "UPDATE faces SET person_id = NULL, confirmed = 0, ignored = 1 WHERE person_id = ?1",
                    "ignore faces");
    faces.bind(1, person);
    faces.run();
    Statement del(*db_, "DELETE FROM people WHERE id = ?1", "delete a person");
    del.bind(1, person);
    del.run();
    people_.erase(person);
    return 0;
  });
}

int64_t Catalog::recluster() {
  return in_transaction("re-cluster faces", [&] {
    // Every person starts again from the faces a person confirmed.
    db_->exec("UPDATE faces SET person_id = NULL WHERE confirmed = 0", "unassign faces");
    people_.clear();
    {
      Statement s(*db_, "SELECT id FROM people", "read people");
      while (s.step()) people_.set(s.int64(0), {}, 0);
    }
    {
      Statement s(*db_, "SELECT person_id, descriptor FROM faces WHERE confirmed = 1 AND person_id IS NOT NULL",
                  "read confirmed faces");
      while (s.step()) people_.add(s.int64(0), unit_descriptor(s.floats(1)));
    }
    struct Pending {
      int64_t id;
      std::vector<float> unit;
    };
    std::vector<Pending> pending;
    {
      Statement s(*db_, R"sql(
SELECT x.id, x.descriptor FROM faces x JOIN files f ON f.id = x.file_id
WHERE x.confirmed = 0 AND x.ignored = 0 ORDER BY f.path, x.rank
)sql", "read faces to cluster");
      while (s.step()) pending.push_back({s.int64(0), unit_descriptor(s.floats(1))});
    }
    Statement set(*db_, "UPDATE faces SET person_id = ?1 WHERE id = ?2", "assign a face");
    for (const Pending& p : pending) {
      int64_t person = people_.nearest(p.unit);
      if (!person) person = new_person();
      people_.add(person, p.unit);
      Statement::Use use(set);
      set.bind(1, person);
      set.bind(2, p.id);
      set.run();
    }
    Statement s(*db_, "SELECT id FROM people", "read people");
    while (s.step()) dirty_people_.push_back(s.int64(0));
    flush_people();
    return db_->query_int("SELECT count(*) FROM people WHERE faces > 0", "count people");
  });
}

}  // namespace tandem::pipeline
