// The SQLite driver of pipeline/sql.h: pipeline/sqlite.h's connection and
// statements behind the common interface.
#include <chrono>
#include <ctime>

#include <fmt/core.h>

#include "core/error.h"
#include "pipeline/sql.h"
#include "pipeline/sqlite.h"

namespace tandem::pipeline::sql {

namespace {

class SqliteCursor : public Cursor {
 public:
  SqliteCursor(sqlite::Database& db, const char* sql, const char* step) : s_(db, sql, step) {}
  void bind(int index, int64_t value) override { s_.bind(index, value); }
  void bind(int index, double value) override { s_.bind(index, value); }
  void bind(int index, std::string_view text) override { s_.bind(index, text); }
  void bind(int index, std::span<const float> values) override { s_.bind(index, values); }
  bool step() override { return s_.step(); }
  void reset() noexcept override { s_.reset(); }
  int64_t int64(int column) const override { return s_.int64(column); }
  double real(int column) const override { return s_.real(column); }
  std::string text(int column) const override { return s_.text(column); }
  std::vector<float> floats(int column) const override { return s_.floats(column); }
  bool is_null(int column) const override { return s_.is_null(column); }

 private:
  sqlite::Statement s_;
};

class SqliteDatabase : public Database {
 public:
  explicit SqliteDatabase(const std::string& path, sqlite::Database::Mode mode = sqlite::Database::Mode::read_write)
      : db_(path, mode) {}
  Dialect dialect() const override { return Dialect::sqlite; }
  const std::string& name() const override { return db_.path(); }
  void exec(const char* sql, const char* step) override { db_.exec(sql, step); }
  std::unique_ptr<Cursor> prepare(const char* sql, const char* step) override {
    return std::make_unique<SqliteCursor>(db_, sql, step);
  }
  // SQLite has no round trips to save: a batched transaction is a plain one.
  void begin_write(const char* step, bool) override { db_.exec("BEGIN IMMEDIATE", step); }
  void begin_read(const char* step) override { db_.exec("BEGIN", step); }
  void commit(const char* step) override { db_.exec("COMMIT", step); }
  void rollback_if_open() noexcept override { db_.rollback_if_open(); }

 private:
  sqlite::Database db_;
};

}  // namespace

int64_t Database::query_int(const char* sql, const char* step) {
  Statement s(*this, sql, step);
  Statement::Use use(s);
  if (!s.step()) throw Error(std::string(step) + ": no result", ErrorContext{name(), "", "", ""});
  return s.int64(0);
}

bool is_postgres_url(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::unique_ptr<Database> open_sqlite(const std::string& path) { return std::make_unique<SqliteDatabase>(path); }

std::unique_ptr<Database> open_database(const std::string& location) {
  if (is_postgres_url(location)) return open_postgres(location);
  std::unique_ptr<Database> db = open_sqlite(location);
  db->exec("PRAGMA busy_timeout = 30000", "set busy timeout");
  return db;
}

std::unique_ptr<Database> open_for_reading(const std::string& location) {
  if (is_postgres_url(location)) return open_postgres(location);
  auto db = std::make_unique<SqliteDatabase>(location, sqlite::Database::Mode::read_only);
  db->exec("PRAGMA busy_timeout = 5000", "set busy timeout");
  // Readers map the file: a page comes from the OS's cache, shared by every
  // connection, instead of a read() into each connection's own small cache.
  // A gallery page driven by 1,500 scattered rows of a million-photo catalog
  // took 7.9 ms so against 14.5. SQLite caps the size at its build's limit
  // (2 GiB in Debian's); tandem never shrinks a catalog file while it may be
  // read, the one case where a mapping would fault.
  db->exec("PRAGMA mmap_size = 68719476736", "map the catalog");
  // Past the mapping (a million-photo catalog is 2.8 GiB, and the indexes a
  // migration adds lie at its end) pages are read() into the connection's
  // cache: 64 MiB keeps the indexes the gallery walks, where SQLite's 2 MiB
  // default read them again and again (8% of the server's time in the
  // kernel's copies; 1,101 against 793 pages/s at 32 clients).
  db->exec("PRAGMA cache_size = -65536", "size the page cache");
  return db;
}

std::string utc_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t secs = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace tandem::pipeline::sql
