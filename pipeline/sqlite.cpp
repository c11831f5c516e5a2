#include "pipeline/sqlite.h"

#include <sqlite3.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace tandem::pipeline::sqlite {

namespace {

// Why SQLite cannot open `path` (or create the log beside it): its "unable
// to open database file" says nothing, and the errno it keeps is from its
// last fallback attempt (ENOENT after EACCES), so the file and its folder
// are asked instead. "" when neither explains it.
std::string cannot_open_reason(const std::string& path, bool write) {
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), write ? R_OK | W_OK : R_OK) != 0)
    return std::string(": ") + std::strerror(errno);
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  if (write && ::access(folder.c_str(), W_OK | X_OK) != 0)
    return ": cannot create files in " + folder + ": " + std::strerror(errno);
  return "";
}

}  // namespace

Database::Database(std::string path, Mode mode) : path_(std::move(path)) {
  const int flags = mode == Mode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if ((rc & 0xff) == SQLITE_CANTOPEN) message += cannot_open_reason(path_, mode == Mode::read_write);
    sqlite3_close(db_);  // a handle comes back even on failure
    db_ = nullptr;
    throw Error("sqlite: open: " + message, ErrorContext{path_, "", "", ""});
  }
  // Errors then carry the extended code (SQLITE_IOERR_WRITE, not just IOERR).
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  // Statements in use are the caller's (they are destroyed first); close
  // checkpoints the WAL into the database file.
  finalize_kept();
  sqlite3_close(db_);
}

sqlite3_stmt* Database::take_prepared(const std::string& sql) {
  auto it = kept_.find(sql);
  if (it == kept_.end()) return nullptr;
  sqlite3_stmt* stmt = it->second;
  kept_.erase(it);
  return stmt;
}

void Database::keep_prepared(std::string sql, sqlite3_stmt* stmt) noexcept {
  // Bounded by flushing: the texts in use are a few dozen (the catalog's
  // fixed statements, the gallery's per filter combination), so a flush is
  // rare and cheaper than tracking recency.
  constexpr size_t kMaxKept = 256;
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  if (kept_.size() >= kMaxKept) finalize_kept();
  try {
    kept_.emplace(std::move(sql), stmt);
  } catch (...) {
    sqlite3_finalize(stmt);  // out of memory: not kept
  }
}

void Database::finalize_kept() noexcept {
  for (auto& [sql, stmt] : kept_) sqlite3_finalize(stmt);
  kept_.clear();
}

void Database::exec(const char* sql, const char* step) {
  check(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr), step);
}

int64_t Database::query_int(const char* sql, const char* step) {
  Statement s(*this, sql, step);
  if (!s.step()) throw Error(std::string("sqlite: ") + step + ": no result", ErrorContext{path_, "", "", ""});
  return s.int64(0);
}

void Database::check(int rc, const char* step) const {
  if (rc != SQLITE_OK) fail(rc, step);
}

void Database::fail(int rc, const char* step) const {
  // Every code passed here came from a call on this connection, so errmsg
  // describes it (often more exactly than errstr: "no such table: files").
  throw Error(std::string("sqlite: ") + step + ": " + sqlite3_errmsg(db_) + os_reason(rc) + " (code " +
                  std::to_string(rc) + ")",
              ErrorContext{path_, "", "", ""});
}

std::string Database::os_reason(int rc) const {
  // SQLite's words for a failed system call are generic ("disk I/O
  // error"); the errno says what to fix. Only for those codes: the errno of
  // an earlier, harmless failure lingers.
  const int primary = rc & 0xff;
  if (primary == SQLITE_CANTOPEN) return cannot_open_reason(path_, true);
  const int err = sqlite3_system_errno(db_);
  if (err == 0 || (primary != SQLITE_IOERR && primary != SQLITE_FULL)) return "";
  return std::string(": ") + std::strerror(err);
}

void Database::rollback_if_open() noexcept {
  if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Statement::Statement(Database& db, const char* sql, const char* step)
    : db_(db), sql_(sql), stmt_(db.take_prepared(sql_)), step_(step) {
  if (stmt_ == nullptr)
    db_.check(sqlite3_prepare_v3(db_.handle(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr), step_);
}

Statement::~Statement() {
  if (stmt_ != nullptr) db_.keep_prepared(std::move(sql_), stmt_);
}

void Statement::bind(int index, int64_t value) {
  db_.check(sqlite3_bind_int64(stmt_, index, value), step_);
}

void Statement::bind(int index, double value) {
  db_.check(sqlite3_bind_double(stmt_, index, value), step_);
}

void Statement::bind(int index, std::string_view text) {
  db_.check(sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
            step_);
}

static_assert(std::endian::native == std::endian::little, "descriptor BLOBs are little-endian float32");

void Statement::bind(int index, std::span<const float> values) {
  // SQLite stores a null pointer as NULL: an empty vector is an empty BLOB.
  static const float none = 0;
  const void* p = values.empty() ? &none : values.data();
  db_.check(sqlite3_bind_blob64(stmt_, index, p, values.size_bytes(), SQLITE_TRANSIENT), step_);
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, step_);
}

int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::text(int column) const {
  // Read the pointer before the size: the SQLite docs' safe order.
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, size_t(sqlite3_column_bytes(stmt_, column))) : std::string();
}

std::vector<float> Statement::floats(int column) const {
  const void* p = sqlite3_column_blob(stmt_, column);
  const size_t bytes = size_t(sqlite3_column_bytes(stmt_, column));
  check(bytes % sizeof(float) == 0, "a float vector BLOB of " + std::to_string(bytes) + " bytes",
        ErrorContext{db_.path(), "", "", step_});
  std::vector<float> out(bytes / sizeof(float));
  if (bytes) std::memcpy(out.data(), p, bytes);
  return out;
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::optional<double> Statement::real_or_null(int column) const {
  return is_null(column) ? std::nullopt : std::optional<double>(real(column));
}

void Statement::bind_or_null(int index, const std::string& text) {
  if (!text.empty()) bind(index, std::string_view(text));
}

void Statement::bind_or_null(int index, const std::optional<double>& value) {
  if (value) bind(index, *value);
}

void Statement::reset() noexcept {
  // reset repeats the last step's error code, which step() already threw.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement::Use::Use(Statement& s) : s_(s) { s_.reset(); }

Statement::Use::~Use() {
  // reset repeats the last step's error code, which step() already threw.
  sqlite3_reset(s_.stmt_);
}

}  // namespace tandem::pipeline::sqlite
