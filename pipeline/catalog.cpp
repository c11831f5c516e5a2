#include "pipeline/catalog.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <unordered_map>

#include "core/error.h"
#include "pipeline/catalog_postgres.h"
#include "pipeline/sql.h"
#include "pipeline/work_queue.h"

namespace tandem::pipeline {

using sql::Statement;

namespace {

// PRAGMA application_id of a tandem catalog ("tndm"): tells it apart from
// any other SQLite file a user might point --catalog at.
constexpr int64_t kApplicationId = 0x746E646D;

// kMigrations[v] turns schema version v into v + 1 (0: an empty file);
// nullptr: the step is written by code shared with PostgreSQL.
// Tags get a table of their own, not a JSON column: "files with a dog",
// "the best score per label" stay one plain, indexed SQL query.
constexpr const char* kMigrations[] = {
    R"sql(
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
)sql",
    // Version 2: a detector's objects, one row each, box corners in pixels
    // of the upright full-size photo. The index serves "photos with a dog".
    R"sql(
CREATE TABLE objects (
  file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  label TEXT NOT NULL,
  score REAL NOT NULL,
  x1 REAL NOT NULL,
  y1 REAL NOT NULL,
  x2 REAL NOT NULL,
  y2 REAL NOT NULL,
  PRIMARY KEY (file_id, rank)
) WITHOUT ROWID;
CREATE INDEX objects_by_label ON objects (label, score);
)sql",
    // Version 3: faces and the people they belong to. A person's centroid
    // is the sum of its faces' unit descriptors (float32 BLOB), kept so that
    // a new face finds its person without reading every face. A name is
    // unique; a person with a name is kept when it has no faces left.
    // `confirmed`: a person put the face there by hand, so re-clustering
    // leaves it; `ignored`: its person was forgotten, so clustering skips it.
    R"sql(
CREATE TABLE people (
  id INTEGER PRIMARY KEY,
  name TEXT UNIQUE,
  centroid BLOB NOT NULL,
  faces INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE TABLE faces (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  score REAL NOT NULL,
  x1 REAL NOT NULL,
  y1 REAL NOT NULL,
  x2 REAL NOT NULL,
  y2 REAL NOT NULL,
  landmarks TEXT NOT NULL,
  descriptor BLOB NOT NULL,
  age REAL NOT NULL,
  gender_score REAL NOT NULL,
  person_id INTEGER REFERENCES people (id) ON DELETE SET NULL,
  confirmed INTEGER NOT NULL DEFAULT 0,
  ignored INTEGER NOT NULL DEFAULT 0,
  UNIQUE (file_id, rank)
);
CREATE INDEX faces_by_person ON faces (person_id);
CREATE VIEW photo_people AS
  SELECT f.path, f.model_id, p.id AS person_id, p.name, count(*) AS faces
  FROM faces x JOIN files f ON f.id = x.file_id JOIN people p ON p.id = x.person_id
  GROUP BY f.id, p.id;
)sql",
    // Version 4: what the camera wrote in the photo's EXIF, one row per
    // file that has any. taken_at is the camera's local time
    // ("YYYY-MM-DDTHH:MM:SS", sorting as text sorts by time); taken_offset
    // its UTC offset where the camera knew it. Positions in WGS-84 degrees.
    // The indexes serve a date range, a place box and a camera.
    R"sql(
CREATE TABLE photo_meta (
  file_id INTEGER PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
  taken_at TEXT,
  taken_offset TEXT,
  make TEXT,
  model TEXT,
  lens TEXT,
  exposure_s REAL,
  f_number REAL,
  iso INTEGER,
  focal_length_mm REAL,
  latitude REAL,
  longitude REAL,
  altitude_m REAL
);
CREATE INDEX photo_meta_by_date ON photo_meta (taken_at);
CREATE INDEX photo_meta_by_place ON photo_meta (latitude, longitude);
CREATE INDEX photo_meta_by_camera ON photo_meta (make, model);
)sql",
    // Version 5: what the gallery asks (gallery/photo_sql.h). A model's
    // files newest first (its pages when no date is known), exact
    // duplicates by content hash, a camera's photos by date, the faces of
    // a photo or a person without reading a face's 4-KiB descriptor (stored
    // before person_id), a person's best face, and any part of a path
    // (an FTS5 trigram index kept by triggers). And the folders `tag` was
    // given: the only places the gallery serves files from.
    R"sql(
CREATE INDEX files_by_model ON files (model_id, id);
CREATE INDEX files_by_hash ON files (content_hash);
DROP INDEX photo_meta_by_camera;
CREATE INDEX photo_meta_by_camera_date ON photo_meta (make, model, taken_at);
DROP INDEX faces_by_person;
CREATE INDEX faces_by_person_file ON faces (person_id, file_id);
CREATE INDEX faces_by_file_person ON faces (file_id, person_id);
CREATE INDEX faces_best ON faces (person_id, score DESC) WHERE ignored = 0;
CREATE VIRTUAL TABLE file_paths USING fts5 (path, content = 'files', content_rowid = 'id', tokenize = 'trigram');
INSERT INTO file_paths (file_paths) VALUES ('rebuild');
CREATE TRIGGER files_path_added AFTER INSERT ON files BEGIN
  INSERT INTO file_paths (rowid, path) VALUES (new.id, new.path);
END;
CREATE TRIGGER files_path_removed AFTER DELETE ON files BEGIN
  INSERT INTO file_paths (file_paths, rowid, path) VALUES ('delete', old.id, old.path);
END;
CREATE TRIGGER files_path_changed AFTER UPDATE OF path ON files BEGIN
  INSERT INTO file_paths (file_paths, rowid, path) VALUES ('delete', old.id, old.path);
  INSERT INTO file_paths (rowid, path) VALUES (new.id, new.path);
END;
CREATE TABLE roots (
  path TEXT PRIMARY KEY,
  added_at TEXT NOT NULL
) WITHOUT ROWID;
)sql",
    // Version 6, the work queue, is written once for both databases
    // (work_queue_schema).
    nullptr,
    // Version 7: a photo's date beside its tags and faces, so that "photos
    // with a dog", "photos of Anna" and both together are read newest first
    // along one index and a page stops after about 60 of them. Walking the
    // date index and testing each photo instead read 34,000 photos for a
    // page of a common tag and a busy person at a million photos (47 ms),
    // and a rare tag's 1,500 photos had to be sorted. Triggers keep the
    // copies equal to photo_meta's, whatever order a batch writes them in.
    R"sql(
ALTER TABLE tags ADD COLUMN taken_at TEXT;
ALTER TABLE faces ADD COLUMN taken_at TEXT;
UPDATE tags SET taken_at = (SELECT m.taken_at FROM photo_meta m WHERE m.file_id = tags.file_id);
UPDATE faces SET taken_at = (SELECT m.taken_at FROM photo_meta m WHERE m.file_id = faces.file_id);
CREATE INDEX tags_by_label_date ON tags (label, taken_at, file_id);
CREATE INDEX faces_by_person_date ON faces (person_id, taken_at, file_id);
CREATE TRIGGER tags_dated AFTER INSERT ON tags BEGIN
  UPDATE tags SET taken_at = (SELECT m.taken_at FROM photo_meta m WHERE m.file_id = new.file_id)
  WHERE file_id = new.file_id AND rank = new.rank;
END;
CREATE TRIGGER faces_dated AFTER INSERT ON faces BEGIN
  UPDATE faces SET taken_at = (SELECT m.taken_at FROM photo_meta m WHERE m.file_id = new.file_id) WHERE id = new.id;
END;
CREATE TRIGGER photo_date_added AFTER INSERT ON photo_meta BEGIN
  UPDATE tags SET taken_at = new.taken_at WHERE file_id = new.file_id;
  UPDATE faces SET taken_at = new.taken_at WHERE file_id = new.file_id;
END;
CREATE TRIGGER photo_date_changed AFTER UPDATE OF taken_at ON photo_meta BEGIN
  UPDATE tags SET taken_at = new.taken_at WHERE file_id = new.file_id;
  UPDATE faces SET taken_at = new.taken_at WHERE file_id = new.file_id;
END;
CREATE TRIGGER photo_date_removed AFTER DELETE ON photo_meta BEGIN
  UPDATE tags SET taken_at = NULL WHERE file_id = old.file_id;
  UPDATE faces SET taken_at = NULL WHERE file_id = old.file_id;
END;
)sql",
    // Version 8: the photos tagged before version 4 never had their EXIF
    // read, and re-tagging a library to get its dates redoes all of its
    // inference. `tag` reads the EXIF of the files listed here (no decode)
    // and takes each off the list; tagging a file again takes it off too.
    // Listed: the photos tagged with no metadata before the first one tagged
    // with some (a later one without was read, and had none); every one
    // when no photo has metadata, at the cost of reading those once.
    R"sql(
CREATE TABLE meta_pending (
  file_id INTEGER PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE
);
INSERT INTO meta_pending (file_id)
SELECT f.id FROM files f
WHERE f.status = 'ok' AND NOT EXISTS (SELECT 1 FROM photo_meta m WHERE m.file_id = f.id)
  AND f.tagged_at < coalesce((SELECT min(g.tagged_at) FROM files g JOIN photo_meta m ON m.file_id = g.id), '~');
CREATE TRIGGER files_retagged AFTER UPDATE OF tagged_at ON files BEGIN
  DELETE FROM meta_pending WHERE file_id = new.id;
END;
)sql",
};
static_assert(std::size(kMigrations) == Catalog::kSchemaVersion);

constexpr const char* kUpsertFile = R"sql(
INSERT INTO files (path, model_id, size, mtime_ns, content_hash, status, error_kind, error,
                   decode_ms, infer_ms, width, height, tagged_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
ON CONFLICT (path, model_id) DO UPDATE SET
  size = excluded.size, mtime_ns = excluded.mtime_ns, content_hash = excluded.content_hash,
  status = excluded.status, error_kind = excluded.error_kind, error = excluded.error,
  decode_ms = excluded.decode_ms, infer_ms = excluded.infer_ms, width = excluded.width,
  height = excluded.height, tagged_at = excluded.tagged_at
RETURNING id
)sql";

constexpr const char* kSelectRecords = R"sql(
SELECT f.id, f.path, f.size, f.mtime_ns, f.content_hash, f.model_id, f.status, f.error_kind,
       f.error, f.decode_ms, f.infer_ms, f.width, f.height, t.label, t.score
FROM files f LEFT JOIN tags t ON t.file_id = f.id
WHERE f.model_id = ?1 ORDER BY f.path, t.rank
)sql";

constexpr const char* kInsertObject = R"sql(
INSERT INTO objects (file_id, rank, label, score, x1, y1, x2, y2)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
)sql";

constexpr const char* kSelectObjects = R"sql(
SELECT o.file_id, o.label, o.score, o.x1, o.y1, o.x2, o.y2
FROM objects o JOIN files f ON f.id = o.file_id
WHERE f.model_id = ?1 ORDER BY o.file_id, o.rank
)sql";

constexpr const char* kOldFaces = R"sql(
SELECT id, x1, y1, x2, y2, descriptor, person_id, confirmed, ignored FROM faces WHERE file_id = ?1
)sql";

constexpr const char* kInsertFace = R"sql(
INSERT INTO faces (file_id, rank, score, x1, y1, x2, y2, landmarks, descriptor, age, gender_score,
                   person_id, confirmed, ignored)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
)sql";

std::unique_ptr<Statement> prepare(sql::Database& db, const char* sql, const char* step) {
  return std::make_unique<Statement>(db, sql, step);
}

// Refuses a SQLite file that some other program wrote, before changing
// anything in it (journal mode included).
void check_is_catalog(sql::Database& db) {
  int64_t app = db.query_int("PRAGMA application_id", "read application id");
  if (app == kApplicationId) return;
  bool empty = app == 0 && db.query_int("PRAGMA user_version", "read schema version") == 0 &&
               db.query_int("SELECT count(*) FROM sqlite_schema", "read schema") == 0;
  check(empty, "not a tandem catalog (a SQLite database some other program wrote)",
        ErrorContext{db.name(), "", "", ""});
}

}  // namespace

namespace {

FileStamp stamp_of(const struct stat& st) {
  return {int64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace

FileStamp file_stamp(const std::string& path) {
  struct stat st {};
  ErrorContext ctx{path, "", "", ""};
  if (::stat(path.c_str(), &st) != 0) throw Error(std::string("cannot stat: ") + std::strerror(errno), ctx);
  check(S_ISREG(st.st_mode), "not a regular file", ctx);
  return stamp_of(st);
}

std::optional<FileStamp> file_stamp_if_any(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return stamp_of(st);
}

Catalog::Catalog(const std::string& path) : db_(sql::open_database(path)) {
  if (db_->dialect() == sql::Dialect::postgresql) open_postgres();
  else open_sqlite();
  upsert_file_ = prepare(*db_, kUpsertFile, "write file row");
  delete_tags_ = prepare(*db_, "DELETE FROM tags WHERE file_id = ?1", "delete old tags");
  insert_tag_ = prepare(*db_, "INSERT INTO tags (file_id, rank, label, score) VALUES (?1, ?2, ?3, ?4)",
                        "write tag");
  delete_objects_ = prepare(*db_, "DELETE FROM objects WHERE file_id = ?1", "delete old objects");
  insert_object_ = prepare(*db_, kInsertObject, "write object");
  finish_work_ = prepare(*db_,
                         "UPDATE work SET done = 1, done_by = owner, owner = NULL, lease_until = 0 "
                         "WHERE model_id = ?1 AND path = ?2 AND done = 0",
                         "mark queued work done");
  find_file_ = prepare(*db_,
                       "SELECT status FROM files WHERE path = ?1 AND model_id = ?2 AND size = ?3 "
                       "AND mtime_ns = ?4",
                       "look up file");
  select_records_ = prepare(*db_, kSelectRecords, "read records");
  select_objects_ = prepare(*db_, kSelectObjects, "read objects");
  old_faces_ = prepare(*db_, kOldFaces, "read old faces");
  delete_faces_ = prepare(*db_, "DELETE FROM faces WHERE file_id = ?1", "delete old faces");
  insert_face_ = prepare(*db_, kInsertFace, "write face");
  insert_person_ = prepare(*db_, "INSERT INTO people (centroid, faces, created_at) VALUES (?1, 0, ?2) RETURNING id",
                           "add a person");
  update_person_ = prepare(*db_, "UPDATE people SET centroid = ?1, faces = ?2 WHERE id = ?3", "update a person");
  prepare_meta();
  count_status_ = prepare(*db_,
                          "SELECT status, count(*) FROM files WHERE model_id = ?1 GROUP BY status",
                          "count files");
}

void Catalog::open_sqlite() {
  check_is_catalog(*db_);
  // WAL: a commit appends to the -wal file, readers never block the writer,
  // and a transaction cut short by a kill is ignored on the next open.
  // synchronous=NORMAL fsyncs only at checkpoints, not at every commit. That
  // still meets "a run killed at any moment loses nothing committed": a
  // committed transaction is in the OS page cache once COMMIT returns and
  // survives the process (even SIGKILL). Only a power loss or kernel crash
  // can drop the last few commits, which the re-run then writes again (the
  // database itself stays consistent either way).
  bool wal = false;
  {
    Statement mode(*db_, "PRAGMA journal_mode = WAL", "set WAL journal mode");
    wal = mode.step() && mode.text(0) == "wal";
  }
  check(wal, "cannot use a write-ahead log here (a network file system?)",
        ErrorContext{db_->name(), "", "", ""});
  db_->exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", "set synchronous mode");
  migrate_sqlite();
  // Read once: a library with none pending (all but upgraded old ones)
  // costs `tag` no lookup per photo.
  metadata_pending_ =
      db_->query_int("SELECT EXISTS (SELECT 1 FROM meta_pending)", "look up pending metadata") != 0;
}

void Catalog::open_postgres() { prepare_postgres_catalog(*db_); }

Catalog::~Catalog() = default;

const std::string& Catalog::path() const { return db_->name(); }

void Catalog::migrate_sqlite() {
  // IMMEDIATE takes the write lock first, so two processes opening a new
  // catalog at once do not both create the tables.
  db_->exec("BEGIN IMMEDIATE", "begin schema migration");
  try {
    int64_t version = db_->query_int("PRAGMA user_version", "read schema version");
    // user_version is any 32-bit integer another program may have set.
    check(version >= 0, "catalog schema version " + std::to_string(version) + " is not one tandem writes",
          ErrorContext{path(), "", "", ""});
    check(version <= kSchemaVersion,
          "catalog schema version " + std::to_string(version) + " is newer than this tandem's (" +
              std::to_string(kSchemaVersion) + "); use a newer tandem",
          ErrorContext{path(), "", "", ""});
    if (version < kSchemaVersion) {
      for (int64_t v = version; v < kSchemaVersion; ++v) {
        const std::string step =
            kMigrations[v] ? std::string(kMigrations[v]) : work_queue_schema(sql::Dialect::sqlite);
        db_->exec(step.c_str(), "migrate schema");
      }
      std::string stamp = "PRAGMA application_id = " + std::to_string(kApplicationId) +
                          "; PRAGMA user_version = " + std::to_string(kSchemaVersion);
      db_->exec(stamp.c_str(), "set schema version");
    }
    db_->exec("COMMIT", "commit schema migration");
  } catch (...) {
    db_->rollback_if_open();
    throw;
  }
}

bool Catalog::up_to_date(const std::string& path, int64_t size, int64_t mtime_ns,
                         const std::string& model_id) {
  return stored(path, size, mtime_ns, model_id) != Stored::none;
}

Catalog::Stored Catalog::stored(const std::string& path, int64_t size, int64_t mtime_ns,
                                const std::string& model_id) {
  return sql::retrying(*db_, reconnect_, [&](bool) { return stored_once(path, size, mtime_ns, model_id); });
}

Catalog::Stored Catalog::stored_once(const std::string& path, int64_t size, int64_t mtime_ns,
                                     const std::string& model_id) {
  Statement::Use use(*find_file_);
  find_file_->bind(1, path);
  find_file_->bind(2, model_id);
  find_file_->bind(3, size);
  find_file_->bind(4, mtime_ns);
  if (!find_file_->step()) return Stored::none;
  return find_file_->text(0) == "ok" ? Stored::ok : Stored::failed;
}

void Catalog::write(std::span<const FileRecord> batch) { write_batch(batch, nullptr, {}); }

void Catalog::write_and_assign(std::span<FileRecord> batch,
                               const std::function<void(std::span<const FileRecord>)>& before_commit) {
  std::vector<std::vector<int64_t>> people;
  write_batch(batch, &people, [&] {
    for (size_t i = 0; i < batch.size(); ++i)
      for (size_t k = 0; k < batch[i].faces.size() && k < people[i].size(); ++k) {
        batch[i].faces[k].person_id = people[i][k];
        batch[i].faces[k].person_name = people[i][k] ? person_name(people[i][k]) : std::string();
      }
    if (before_commit) before_commit(batch);
  });
}

void Catalog::write_batch(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people,
                          const std::function<void()>& before_commit) {
  if (batch.empty()) return;
  // Running the batch again stores what running it once does: each file's
  // rows are replaced, and the people index is read again after a rollback.
  sql::retrying(*db_, reconnect_, [&](bool) { write_batch_once(batch, people, before_commit); });
}

void Catalog::write_batch_once(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people,
                               const std::function<void()>& before_commit) {
  // Batched: the statements whose results are not read are sent without
  // waiting for each (a file's row upsert still waits, for its id).
  db_->begin_write("begin transaction", true);
  try {
    if (can_write_in_bulk(batch)) {
      write_in_bulk(batch, people);
    } else {
      for (const FileRecord& r : batch) {
        std::vector<int64_t> assigned = write_one(r);
        if (people) people->push_back(std::move(assigned));
      }
    }
    flush_people();
    if (before_commit) before_commit();
    db_->commit("commit transaction");
    people_locked_ = false;
  } catch (...) {
    db_->rollback_if_open();
    people_data_version_ = -1;  // the index may hold what was rolled back
    people_locked_ = false;
    dirty_people_.clear();
    if (people) people->clear();
    throw;
  }
}

void Catalog::check_record(const FileRecord& r) const {
  check(!r.path.empty() && !r.model_id.empty(), "a catalog record needs a path and a model id",
        ErrorContext{path(), "", "", ""});
  check(r.ok || (r.tags.empty() && r.objects.empty() && r.faces.empty()),
        "the record of a failed file carries tags, objects or faces: " + r.path,
        ErrorContext{path(), "", "", ""});
}

std::vector<int64_t> Catalog::write_one(const FileRecord& r) {
  check_record(r);
  int64_t id = 0;
  {
    Statement& s = *upsert_file_;
    Statement::Use use(s);
    s.bind(1, r.path);
    s.bind(2, r.model_id);
    s.bind(3, r.size);
    s.bind(4, r.mtime_ns);
    s.bind(5, r.content_hash);
    s.bind(6, std::string_view(r.ok ? "ok" : "failed"));
    s.bind_or_null(7, r.error_kind);  // NULL when empty, so SQL can say `error IS NULL`
    s.bind_or_null(8, r.error);
    s.bind(9, r.decode_ms);
    s.bind(10, r.infer_ms);
    s.bind(11, int64_t(r.width));
    s.bind(12, int64_t(r.height));
    s.bind(13, sql::utc_now());
    s.step();  // RETURNING: the row (new or replaced) comes back
    id = s.int64(0);
    s.run();
  }
  {
    Statement::Use use(*delete_tags_);
    delete_tags_->bind(1, id);
    delete_tags_->run_later();
  }
  for (size_t rank = 0; rank < r.tags.size(); ++rank) {
    Statement::Use use(*insert_tag_);
    insert_tag_->bind(1, id);
    insert_tag_->bind(2, int64_t(rank));
    insert_tag_->bind(3, r.tags[rank].label);
    insert_tag_->bind(4, double(r.tags[rank].score));
    insert_tag_->run_later();
  }
  write_objects(id, r);
  write_meta(id, r.meta);
  {
    // Queued (tag --queue): done with this commit, whoever claimed it.
    Statement::Use use(*finish_work_);
    finish_work_->bind(1, r.model_id);
    finish_work_->bind(2, r.path);
    finish_work_->run_later();
  }
  return write_faces(id, r);
}

void Catalog::write_objects(int64_t file_id, const FileRecord& r) {
  {
    Statement::Use use(*delete_objects_);
    delete_objects_->bind(1, file_id);
    delete_objects_->run_later();
  }
  Statement& s = *insert_object_;
  for (size_t rank = 0; rank < r.objects.size(); ++rank) {
    const DetectedObject& o = r.objects[rank];
    Statement::Use use(s);
    s.bind(1, file_id);
    s.bind(2, int64_t(rank));
    s.bind(3, o.label);
    s.bind(4, double(o.score));
    s.bind(5, double(o.box.x1));
    s.bind(6, double(o.box.y1));
    s.bind(7, double(o.box.x2));
    s.bind(8, double(o.box.y2));
    s.run_later();
  }
}

std::vector<FileRecord> Catalog::records(const std::string& model_id) {
  // One read transaction: files, tags and objects from the same commit,
  // whatever another process writes meanwhile.
  return sql::in_transaction(*db_, false, "read records", [&] { return read_records(model_id); });
}

std::vector<FileRecord> Catalog::read_records(const std::string& model_id) {
  std::vector<FileRecord> out;
  std::unordered_map<int64_t, size_t> index;  // file id -> its record in out
  Statement& s = *select_records_;
  Statement::Use use(s);
  s.bind(1, model_id);
  int64_t current = -1;
  while (s.step()) {
    // One row per tag (or one with NULL tag columns): a new id starts a file.
    if (s.int64(0) != current) {
      current = s.int64(0);
      index[current] = out.size();
      FileRecord& r = out.emplace_back();
      r.path = s.text(1);
      r.size = s.int64(2);
      r.mtime_ns = s.int64(3);
      r.content_hash = s.text(4);
      r.model_id = s.text(5);
      r.ok = s.text(6) == "ok";
      r.error_kind = s.text(7);
      r.error = s.text(8);
      r.decode_ms = s.real(9);
      r.infer_ms = s.real(10);
      r.width = int(s.int64(11));
      r.height = int(s.int64(12));
    }
    if (!s.is_null(13)) out.back().tags.push_back({s.text(13), float(s.real(14))});
  }
  Statement& o = *select_objects_;
  Statement::Use use_objects(o);
  o.bind(1, model_id);
  while (o.step()) {
    Box box{float(o.real(3)), float(o.real(4)), float(o.real(5)), float(o.real(6))};
    out[index.at(o.int64(0))].objects.push_back({o.text(1), float(o.real(2)), box});
  }
  read_meta(model_id, out, index);
  read_faces(model_id, out, index);
  return out;
}

CatalogCounts Catalog::counts(const std::string& model_id) {
  CatalogCounts c;
  Statement& s = *count_status_;
  Statement::Use use(s);
  s.bind(1, model_id);
  while (s.step()) (s.text(0) == "ok" ? c.ok : c.failed) = s.int64(1);
  return c;
}

void Catalog::add_roots(std::span<const std::string> roots) {
  if (roots.empty()) return;
  sql::retrying(*db_, reconnect_, [&](bool) {
    sql::in_transaction(*db_, true, "record roots", [&] {
      Statement s(*db_, "INSERT INTO roots (path, added_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                  "record a root");
      const std::string now = sql::utc_now();
      for (const std::string& r : roots) {
        Statement::Use use(s);
        s.bind(1, r);
        s.bind(2, now);
        s.run();
      }
    });
  });
}

void Catalog::refresh_statistics() {
  if (db_->dialect() == sql::Dialect::postgresql) return;  // its autovacuum analyzes as tables grow
  const int64_t rows = db_->query_int("SELECT coalesce(max(id), 0) FROM files", "count files");
  int64_t analyzed = 0;
  if (db_->query_int("SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'", "look for statistics") > 0) {
    // stat1's first number is the table's row count when ANALYZE ran.
    Statement s(*db_, "SELECT stat FROM sqlite_stat1 WHERE tbl = 'files' AND idx = 'files_by_model'",
                "read statistics");
    if (s.step()) analyzed = std::atoll(s.text(0).c_str());
  }
  if (rows > 0 && (analyzed == 0 || rows >= 2 * analyzed)) db_->exec("ANALYZE", "refresh query statistics");
}

void Catalog::checkpoint() {
  // PostgreSQL made each commit durable when it returned.
  if (db_->dialect() == sql::Dialect::sqlite)
    db_->exec("PRAGMA wal_checkpoint(PASSIVE)", "checkpoint the write-ahead log");
}

}  // namespace tandem::pipeline
