#pragma once
// The catalog's storage, one small interface over two databases: SQLite
// (the embedded default, a file) and PostgreSQL (a server many machines'
// `tag` workers share). The catalog writes its SQL once, with ?N
// parameters (or bare ?, numbered as SQLite numbers them), in the subset
// both speak (ON CONFLICT upserts, RETURNING,
// no engine-specific functions); only the schema and the connection set-up
// differ per dialect. Every driver error becomes a tandem::Error naming the
// database and the step:
//   photos.sqlite: sqlite: write tag: database or disk is full (code 13)
//   postgresql://host/photos: postgresql: write tag: could not ...
// Not thread-safe: one thread uses a Database and its statements at a time.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace tandem::pipeline::sql {

enum class Dialect { sqlite, postgresql };

// A driver's prepared statement, what Statement forwards to.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void bind(int index, int64_t value) = 0;
  virtual void bind(int index, double value) = 0;
  virtual void bind(int index, std::string_view text) = 0;
  // Little-endian float32 bytes (a BLOB, a bytea).
  virtual void bind(int index, std::span<const float> values) = 0;
  virtual bool step() = 0;
  // Runs a statement whose rows (none) and outcome the caller does not
  // need before the transaction's next statement that returns rows or its
  // commit: a driver may send it without waiting (an error is reported
  // there). By default it simply runs.
  virtual void run_later() { step(); }
  // Back before the first row, every parameter NULL again.
  virtual void reset() noexcept = 0;
  virtual int64_t int64(int column) const = 0;
  virtual double real(int column) const = 0;
  virtual std::string text(int column) const = 0;
  virtual std::vector<float> floats(int column) const = 0;
  virtual bool is_null(int column) const = 0;
};

class Database {
 public:
  virtual ~Database() = default;
  virtual Dialect dialect() const = 0;
  // The file, or the URL without its password: what messages name.
  virtual const std::string& name() const = 0;
  // SQL that returns no rows (may hold several statements).
  virtual void exec(const char* sql, const char* step) = 0;
  virtual std::unique_ptr<Cursor> prepare(const char* sql, const char* step) = 0;
  // A transaction that will write (SQLite takes its write lock at once, so
  // two writers queue instead of failing at their first write), one that
  // reads a single snapshot, and their end. `batched`: statements run with
  // run_later() are sent without waiting for each (PostgreSQL's pipeline
  // mode: a batch of files costs a few round trips, not a dozen each);
  // only single-statement SQL may then go to exec().
  virtual void begin_write(const char* step, bool batched = false) = 0;
  virtual void begin_read(const char* step) = 0;
  virtual void commit(const char* step) = 0;
  // For error paths: never throws, the first Error is the one to see.
  virtual void rollback_if_open() noexcept = 0;
  // After an Error of kind unavailable (the server went away): connects
  // again, or throws unavailable. Statements prepared before stay usable
  // (a driver prepares them again on the new connection). SQLite, a file,
  // never loses its connection.
  virtual void reconnect() {}

  // A statement returning one integer (a count).
  int64_t query_int(const char* sql, const char* step);
};

class Statement {
 public:
  Statement(Database& db, const char* sql, const char* step) : cursor_(db.prepare(sql, step)) {}

  void bind(int index, int64_t value) { cursor_->bind(index, value); }
  void bind(int index, double value) { cursor_->bind(index, value); }
  void bind(int index, std::string_view text) { cursor_->bind(index, text); }
  void bind(int index, std::span<const float> values) { cursor_->bind(index, values); }
  // Binds nothing for an empty text or no value: the parameter stays NULL.
  void bind_or_null(int index, const std::string& text) {
    if (!text.empty()) bind(index, std::string_view(text));
  }
  void bind_or_null(int index, const std::optional<double>& value) {
    if (value) bind(index, *value);
  }
  // Advances: true when a row is ready, false when the statement is done.
  bool step() { return cursor_->step(); }
  void run() { step(); }
  void run_later() { cursor_->run_later(); }

  int64_t int64(int column) const { return cursor_->int64(column); }
  double real(int column) const { return cursor_->real(column); }
  std::string text(int column) const { return cursor_->text(column); }
  std::vector<float> floats(int column) const { return cursor_->floats(column); }
  bool is_null(int column) const { return cursor_->is_null(column); }
  std::optional<double> real_or_null(int column) const {
    return is_null(column) ? std::nullopt : std::optional<double>(real(column));
  }

  // Resets the statement and clears its bindings at both ends of a use, so
  // a statement never keeps a read snapshot or stale values after an early
  // return or an Error.
  class Use {
   public:
    explicit Use(Statement& s) : s_(s) { s_.cursor_->reset(); }
    ~Use() { s_.cursor_->reset(); }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    Statement& s_;
  };

 private:
  std::unique_ptr<Cursor> cursor_;
};

// Runs `body` in one transaction (writing or reading): committed when it
// returns, rolled back when it throws. `step` names the transaction in an
// error.
template <typename Body>
auto in_transaction(Database& db, bool write, const char* step, Body body) -> decltype(body()) {
  if (write) db.begin_write(step);
  else db.begin_read(step);
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      db.commit(step);
    } else {
      auto result = body();
      db.commit(step);
      return result;
    }
  } catch (...) {
    db.rollback_if_open();
    throw;
  }
}

// What a caller does when the database goes away mid-run (a server
// restarting, a network cut): reconnect with pauses that grow from 0.25 s
// to 8 s, and give up `give_up_s` after the loss with the last error. The
// workers of a shared run outlive a database restart this way, while one
// whose database is gone for good stops instead of hanging. `note` hears
// the loss and the recovery, for the user's log.
struct Reconnect {
  double give_up_s = 60;
  std::function<void(const std::string&)> note;
};

// Waits and reconnects after `lost` (an Error of kind unavailable) until
// the connection is back; throws unavailable once policy.give_up_s has
// passed since `since`.
void reconnect_after(Database& db, const Reconnect& policy, const Error& lost,
                     std::chrono::steady_clock::time_point since);

// Runs `body(again)`, one whole transaction that redoes everything from the
// caller's own state, and when it fails for a lost connection, reconnects
// and runs it again (`again`: true). Safe only where running the body
// twice stores what running it once does (upserts, delete-and-insert): a
// commit whose answer was lost may have happened.
template <typename Body>
auto retrying(Database& db, const Reconnect& policy, Body body) -> decltype(body(false)) {
  std::optional<std::chrono::steady_clock::time_point> since;
  for (bool again = false;; again = true) {
    try {
      return body(again);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) throw;
      if (!since) since = std::chrono::steady_clock::now();
      reconnect_after(db, policy, e, *since);
    }
  }
}

// Whether a --catalog names a PostgreSQL database (postgresql://...,
// postgres://...) rather than a SQLite file.
bool is_postgres_url(std::string_view location);

// Opens (creating a missing file) the SQLite database at `path`.
std::unique_ptr<Database> open_sqlite(const std::string& path);
// The database a --catalog names: a postgresql:// URL or a SQLite file.
// On SQLite a writer waits for another process's transaction to end (up
// to a busy timeout) instead of failing at once.
std::unique_ptr<Database> open_database(const std::string& location);
// The database a --catalog names, for a reader that never writes: a SQLite
// file opened read-only (it must exist; a writer's transaction is waited
// for up to a busy timeout), or a PostgreSQL connection.
std::unique_ptr<Database> open_for_reading(const std::string& location);
// Connects to the PostgreSQL database at `url` (libpq's connection URI).
// Throws Error::unsupported in a build without libpq.
std::unique_ptr<Database> open_postgres(const std::string& url);
bool built_with_postgres();

// The current UTC time as ISO 8601 with milliseconds ("...T12:34:56.789Z"):
// timestamps are made here, not by either database's own functions.
std::string utc_now();

}  // namespace tandem::pipeline::sql
