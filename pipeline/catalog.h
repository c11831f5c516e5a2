#pragma once
// The catalog `tandem tag` writes: one SQLite file (or one PostgreSQL
// database, for workers on many machines: pipeline/sql.h) holding, per (file, model),
// what the file was (path, size, mtime, content hash), what the model found
// (tags with scores) or why it failed, and how long decoding and inference
// took. A detector's objects (label, score, box in pixels of the upright
// full-size photo) have a table of their own. Plain SQL reads it:
//   SELECT f.path, t.label, t.score FROM files f JOIN tags t ON t.file_id = f.id
//   WHERE f.model_id = 'centernet' AND f.status = 'ok' ORDER BY f.path, t.rank;
//   SELECT f.path, o.score, o.x1, o.y1, o.x2, o.y2 FROM objects o
//   JOIN files f ON f.id = o.file_id WHERE o.label = 'dog' ORDER BY o.score DESC;
// (a files row is one (path, model): its id names the model too). What the
// camera wrote (date taken, camera, lens, exposure, GPS) is in photo_meta:
//   SELECT f.path, m.taken_at FROM photo_meta m JOIN files f ON f.id = m.file_id
//   WHERE m.taken_at BETWEEN '2021-07-01' AND '2021-08-01' ORDER BY m.taken_at;
//
// Crash safety: write() commits a batch in one transaction, and a re-run
// writes every file that is not up_to_date(). A process killed at any moment
// loses at most the batch in flight, which the re-run writes again; the
// UNIQUE(path, model_id) upsert means nothing is ever stored twice.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "image/photo_metadata.h"
#include "pipeline/people.h"
#include "pipeline/sql.h"
#include "pipeline/tag_score.h"

namespace tandem::pipeline {

struct FileRecord {
  std::string path;  // as the caller names it; the catalog compares bytes
  int64_t size = 0;
  int64_t mtime_ns = 0;      // modification time, ns since the epoch
  std::string content_hash;  // the caller's choice of hash, as text
  std::string model_id;
  bool ok = true;
  std::string error_kind;  // when !ok: a short class ("decode", "read", ...)
  std::string error;       // when !ok: the message shown to the user
  std::vector<TagScore> tags;  // best first
  std::vector<DetectedObject> objects;  // a detector's, best first; a failed file has none
  std::vector<FaceRecord> faces;        // best first; a failed file has none
  double decode_ms = 0, infer_ms = 0;
  int width = 0, height = 0;  // decoded size; 0 when decoding failed
  image::PhotoMetadata meta;  // what the camera wrote (EXIF), read with the file
};

// Size and modification time of a regular file (what up_to_date compares);
// throws Error naming the file if it is missing or not a regular file.
struct FileStamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
};
FileStamp file_stamp(const std::string& path);
// The same, or nothing when the file is gone or not a regular file: for a
// caller that only asks whether it is still the file it was.
std::optional<FileStamp> file_stamp_if_any(const std::string& path);

// One person as `tandem people` lists it: its representative face is its
// best-scoring one (photo and box).
struct PersonSummary {
  int64_t id = 0;
  std::string name;  // empty: unnamed
  int64_t faces = 0;
  std::string photo;
  Box box;
};

struct CatalogCounts {
  int64_t ok = 0;
  int64_t failed = 0;
};

// Not thread-safe: one thread (the pipeline's writer) uses a Catalog.
// Several processes may share a catalog file; a writer waits for another's
// transaction to end (up to a busy timeout) instead of failing at once.
class Catalog {
 public:
  // Schema version kept in PRAGMA user_version; opening an older catalog
  // migrates it, a newer one is an Error.
  static constexpr int kSchemaVersion = 8;

  // Opens the catalog at `path`, creating it (and its folder's -wal/-shm
  // files) if missing; a postgresql:// URL connects to that database and
  // creates the tables in it if it has none. Throws Error if the file or
  // database is not a tandem catalog.
  explicit Catalog(const std::string& path);
  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  const std::string& path() const;

  // What the writes of a run, and its lookups, do when a server catalog's
  // connection is lost: reconnect and write the batch again, for up to
  // policy.give_up_s (sql::Reconnect); then the Error ends the run. A batch
  // is stored whole or not at all either way.
  void set_reconnect(sql::Reconnect policy) { reconnect_ = std::move(policy); }

  // Whether `path` is in the catalog for `model_id` (tagged or failed) with
  // this size and mtime, i.e. a re-run may skip it.
  bool up_to_date(const std::string& path, int64_t size, int64_t mtime_ns,
                  const std::string& model_id);
  // What the catalog holds for the file as it is now: nothing (never
  // tagged, or changed since), a result, or a failure.
  enum class Stored { none, ok, failed };
  Stored stored(const std::string& path, int64_t size, int64_t mtime_ns, const std::string& model_id);

  // Photos tagged before the catalog kept EXIF metadata (schema version 4)
  // have none; whether `path` is one, for `model_id`. Always false on
  // PostgreSQL, whose catalogs are all younger.
  bool metadata_pending(const std::string& path, const std::string& model_id);
  // Stores the metadata read for such photos (path, metadata) in one
  // transaction; none of them is pending afterwards.
  void backfill_metadata(std::span<const std::pair<std::string, image::PhotoMetadata>> photos,
                         const std::string& model_id);

  // Stores `batch` in one transaction: all of it or, on an Error, none. A
  // record replaces the one for the same (path, model_id), tags and objects
  // included. A failed record (ok false) with tags or objects is an Error.
  void write(std::span<const FileRecord> batch);
  // The same, and sets each face's person_id and person_name to the person
  // the catalog put it in; then, still inside the transaction, calls
  // `before_commit` with the batch. What it writes beside the catalog (the
  // XMP sidecars) is done before the catalog calls the files done: when it
  // throws, the batch is rolled back and a re-run does those files again.
  void write_and_assign(std::span<FileRecord> batch,
                        const std::function<void(std::span<const FileRecord>)>& before_commit = {});

  // Every record for `model_id`, ordered by path (bytewise), tags and
  // objects best first, read in one transaction.
  std::vector<FileRecord> records(const std::string& model_id);

  CatalogCounts counts(const std::string& model_id);

  // Records the folders (or files) `tag` was given, absolute: the gallery
  // serves files only from within them. One transaction; known ones stay.
  void add_roots(std::span<const std::string> roots);

  // Runs ANALYZE when the catalog has none yet or has doubled since (about
  // 2 s a million photos, so a few times in a library's life): SQLite's
  // planner needs its row counts to read the gallery's summaries and
  // people by index.
  void refresh_statistics();

  // Copies the write-ahead log into the database file and syncs it. Commits
  // are not synced (synchronous = NORMAL), so this is where a failing disk
  // shows: called at the end of a run, it ends with that error rather than
  // closing over it (SQLite ignores a failed checkpoint at close).
  void checkpoint();

  // People (pipeline/people.h). Every call is one transaction. Names are
  // unique; an id or a face id that does not exist is an Error.
  std::vector<PersonSummary> people();
  void name_person(int64_t person, const std::string& name);  // "" removes the name
  // Moves every face of `from` into `into` (confirmed) and deletes `from`;
  // two different names refuse to merge.
  void merge_people(int64_t into, int64_t from);
  // Moves the faces into a new person (confirmed there); returns its id.
  int64_t split_faces(std::span<const int64_t> face_ids);
  // Deletes the person (its name too); its faces are ignored from now on.
  void forget_person(int64_t person);
  // Assigns every face again that no person confirmed, in file order, to
  // the people that keep confirmed faces or to new ones; returns how many
  // people have faces afterwards. Named people keep their names.
  int64_t recluster();

 private:
  void open_sqlite();
  void migrate_sqlite();
  void open_postgres();
  // The people's change count: SQLite's data_version (another connection
  // committed), PostgreSQL's counter that every change of people bumps.
  int64_t people_version();
  // Before reading or changing people in a write transaction: on
  // PostgreSQL, workers on other machines change them too, so people are
  // changed by one transaction at a time (SQLite's writers are anyway).
  void lock_people();
  void write_batch(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people,
                   const std::function<void()>& before_commit);
  void write_batch_once(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people,
                        const std::function<void()>& before_commit);
  Stored stored_once(const std::string& path, int64_t size, int64_t mtime_ns, const std::string& model_id);
  std::vector<int64_t> write_one(const FileRecord& r);
  void check_record(const FileRecord& r) const;
  // PostgreSQL: the batch's rows as one statement per table
  // (pipeline/catalog_bulk.cpp), where its paths are distinct.
  bool can_write_in_bulk(std::span<const FileRecord> batch) const;
  void write_in_bulk(std::span<const FileRecord> batch, std::vector<std::vector<int64_t>>* people);
  void upsert_files_in_bulk(std::span<const FileRecord> batch, std::vector<int64_t>& ids, std::vector<bool>& fresh);
  void insert_rows_in_bulk(std::span<const FileRecord> batch, const std::vector<int64_t>& ids);
  void write_objects(int64_t file_id, const FileRecord& r);
  void prepare_meta();
  void write_meta(int64_t file_id, const image::PhotoMetadata& m);
  void read_meta(const std::string& model_id, std::vector<FileRecord>& out,
                 const std::unordered_map<int64_t, size_t>& index);
  // `fresh`: the file's row is new, so it has no old faces to read.
  std::vector<int64_t> write_faces(int64_t file_id, const FileRecord& r, bool fresh = false);
  std::string person_name(int64_t person);
  void read_faces(const std::string& model_id, std::vector<FileRecord>& out,
                  const std::unordered_map<int64_t, size_t>& index);
  void load_people();
  int64_t new_person();
  void flush_people();
  template <typename Body>
  auto in_transaction(const char* what, Body body);
  std::vector<FileRecord> read_records(const std::string& model_id);

  std::unique_ptr<sql::Database> db_;
  sql::Reconnect reconnect_{0, {}};  // none unless the caller asks for it
  bool metadata_pending_ = false;    // any photo is (read at open)
  // Prepared once, used for every file (declared after db_: destroyed first).
  std::unique_ptr<sql::Statement> upsert_file_, delete_tags_, insert_tag_,
      delete_objects_, insert_object_, find_file_, select_records_, select_objects_, count_status_,
      old_faces_, delete_faces_, insert_face_, insert_person_, update_person_, delete_meta_, insert_meta_,
      select_meta_, finish_work_;
  // The people, loaded at the first write with faces and again whenever
  // another connection changed the file (PRAGMA data_version).
  PeopleIndex people_;
  int64_t people_data_version_ = -1;
  std::vector<int64_t> dirty_people_;  // centroids to write back before commit
  bool people_locked_ = false;         // in this transaction (lock_people)
};

}  // namespace tandem::pipeline
