#pragma once
// A thin layer over the SQLite C API for the catalog: one connection, prepared
// statements that live as long as it, and every return code turned into a
// tandem::Error naming the database file and the step that failed:
//   tags.sqlite: sqlite: insert tag: database or disk is full (code 13)
// Not thread-safe: one thread uses a Database and its statements at a time.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace tandem::pipeline::sqlite {

class Database {
 public:
  enum class Mode { read_write, read_only };
  // Opens the database file at `path`; read_write creates it if missing,
  // read_only never writes (not even a journal-mode change) and fails on a
  // missing file.
  explicit Database(std::string path, Mode mode = Mode::read_write);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs SQL that returns no rows (may hold several statements).
  void exec(const char* sql, const char* step);
  // Runs a statement returning one integer (a PRAGMA, a count).
  int64_t query_int(const char* sql, const char* step);
  // Throws the Error for return code `rc` unless it is SQLITE_OK.
  void check(int rc, const char* step) const;
  [[noreturn]] void fail(int rc, const char* step) const;

  // Rolls back the open transaction, if any (SQLite ends one itself on some
  // errors). For error paths: never throws, the first Error is the one to see.
  void rollback_if_open() noexcept;
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // A statement of this SQL text prepared before and no longer in use, or
  // nullptr. Parsing and planning a statement costs more than running most
  // of the catalog's (a gallery page of 60 photos spent most of its time
  // there), and the same texts come back on every page and every batch.
  sqlite3_stmt* take_prepared(const std::string& sql);
  // Keeps a statement for the next take_prepared of its text: reset (no
  // read snapshot held) and its bindings cleared.
  void keep_prepared(std::string sql, sqlite3_stmt* stmt) noexcept;

 private:
  // ": <strerror>" when `rc` is a failed system call's, else "".
  std::string os_reason(int rc) const;
  void finalize_kept() noexcept;

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unordered_multimap<std::string, sqlite3_stmt*> kept_;
};

class Statement {
 public:
  Statement(Database& db, const char* sql, const char* step);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds parameter `index` (1-based, as in ?1).
  void bind(int index, int64_t value);
  void bind(int index, double value);
  void bind(int index, std::string_view text);
  // A float vector as a BLOB of little-endian float32 (the byte order of
  // every machine tandem builds for; a static_assert in sqlite.cpp says so).
  void bind(int index, std::span<const float> values);
  // Binds nothing for an empty text or no value: the parameter stays NULL
  // (Use clears every binding).
  void bind_or_null(int index, const std::string& text);
  void bind_or_null(int index, const std::optional<double>& value);
  // Advances: true when a row is ready, false when the statement is done.
  bool step();
  // Runs a statement that returns no rows to completion.
  void run() { step(); }

  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  // A BLOB written by bind(span<const float>); an Error if its size is not
  // a whole number of floats.
  std::vector<float> floats(int column) const;
  bool is_null(int column) const;
  std::optional<double> real_or_null(int column) const;
  // Back before the first row, every binding NULL (what Use does).
  void reset() noexcept;

  // Resets the statement and clears its bindings when it goes out of scope,
  // so a statement never keeps a read snapshot (which would stall WAL
  // checkpoints) or stale values after an early return or an Error.
  class Use {
   public:
    explicit Use(Statement& s);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    Statement& s_;
  };

 private:
  Database& db_;
  std::string sql_;  // the text it was asked for: its key among the kept
  sqlite3_stmt* stmt_ = nullptr;
  const char* step_;
};

}  // namespace tandem::pipeline::sqlite
