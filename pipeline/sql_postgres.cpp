// The PostgreSQL driver of pipeline/sql.h, on libpq (Debian's libpq-dev).
// Statements are prepared once per connection and SQL text (the catalog's
// SQL is a fixed set of strings), their ?N and ? parameters rewritten as $N and
// sent as text (numbers with every significant digit, so a double comes
// back bit for bit) or, for float vectors, as binary bytea.
//
// A batched write transaction runs in libpq's pipeline mode: statements
// run with run_later() are sent and not waited for; a statement whose rows
// are needed sends a flush request and reads, in order, the results of
// everything sent before it (the first error among them is thrown there),
// then its own; commit syncs the pipeline and reads the rest.
#include "pipeline/sql.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include "core/error.h"

#if TANDEM_HAVE_POSTGRES
#include <libpq-fe.h>
#endif

namespace tandem::pipeline::sql {

namespace {

// The URL as messages show it: without a password, in the authority part
// (user:secret@host) or as a parameter (?password=secret).
std::string without_password(const std::string& url) {
  std::string r = url;
  const size_t scheme = r.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3, at = r.find('@', start), slash = r.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = r.find(':', start);
      if (colon != std::string::npos && colon < at) r.erase(colon, at - colon);
    }
  }
  for (size_t p = r.find("password="); p != std::string::npos; p = r.find("password=", p + 9)) {
    const size_t end = r.find('&', p);
    r.replace(p + 9, (end == std::string::npos ? r.size() : end) - (p + 9), "***");
  }
  return r;
}

}  // namespace

#if TANDEM_HAVE_POSTGRES

namespace {

// ?N placeholders as PostgreSQL's $N, outside quoted text, and a bare ? as
// SQLite numbers it (one more than the highest number so far); the highest N.
std::string dollar_parameters(const char* sql, int* count) {
  std::string out;
  *count = 0;
  char quote = 0;
  for (const char* p = sql; *p; ++p) {
    if (quote) {
      if (*p == quote) quote = 0;
    } else if (*p == '\'' || *p == '"') {
      quote = *p;
    } else if (*p == '?') {
      int n = 0;
      while (p[1] >= '0' && p[1] <= '9') n = n * 10 + (*++p - '0');
      if (n == 0) n = *count + 1;
      *count = std::max(*count, n);
      out += '$' + std::to_string(n);
      continue;
    }
    out += *p;
  }
  return out;
}

class PgDatabase;

class PgCursor : public Cursor {
 public:
  PgCursor(PgDatabase& db, const char* sql, const char* step);
  ~PgCursor() override { PQclear(result_); }
  void bind(int index, int64_t value) override { set(index, std::to_string(value), 0); }
  void bind(int index, double value) override {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    set(index, text, 0);
  }
  void bind(int index, std::string_view text) override {
    // Text parameters travel NUL-terminated: a NUL inside would cut the
    // value short without a word, so it is refused. (Bytes that are not
    // UTF-8 the server refuses itself, naming them.)
    check(text.find('\0') == std::string_view::npos, "text with a NUL byte cannot be stored in PostgreSQL",
          ErrorContext{db_name(), "", "", step_});
    set(index, std::string(text), 0);
  }
  void bind(int index, std::span<const float> values) override {
    set(index, std::string(reinterpret_cast<const char*>(values.data()), values.size_bytes()), 1);
  }
  bool step() override;
  void run_later() override;
  void reset() noexcept override {
    PQclear(result_);
    result_ = nullptr;
    row_ = -1;
    for (auto& v : values_) v.reset();
    std::fill(formats_.begin(), formats_.end(), 0);
  }
  int64_t int64(int column) const override { return is_null(column) ? 0 : std::strtoll(value(column), nullptr, 10); }
  double real(int column) const override { return is_null(column) ? 0 : std::strtod(value(column), nullptr); }
  std::string text(int column) const override {
    return is_null(column) ? std::string() : std::string(value(column), size_t(PQgetlength(result_, row_, column)));
  }
  std::vector<float> floats(int column) const override;
  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) != 0; }

 private:
  void set(int index, std::string bytes, int format);
  const std::string& db_name() const;
  // Sends the statement with its parameters (pipeline mode or not).
  void send();
  const char* value(int column) const { return PQgetvalue(result_, row_, column); }

  PgDatabase& db_;
  std::string sql_;  // prepared again on a new connection
  const char* step_;
  std::vector<std::optional<std::string>> values_;
  std::vector<int> formats_;
  PGresult* result_ = nullptr;
  int row_ = -1;  // -1: not executed since the last reset
};

class PgDatabase : public Database {
 public:
  explicit PgDatabase(const std::string& url) : name_(without_password(url)) {
    conn_ = PQconnectdb(url.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      std::string why = conn_ ? trimmed(PQerrorMessage(conn_)) : "out of memory";
      PQfinish(conn_);
      throw Error::unavailable("postgresql: connect: " + why, ErrorContext{name_, "", "", ""});
    }
    // NOTICEs ("relation already exists, skipping") are not errors.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgDatabase() override { PQfinish(conn_); }

  Dialect dialect() const override { return Dialect::postgresql; }
  const std::string& name() const override { return name_; }
  void exec(const char* sql, const char* step) override {
    if (!pipelined_) {
      PQclear(check(PQexec(conn_, sql), step));
      return;
    }
    send_text(sql, step);
    PQclear(read_through_last(step));
  }
  std::unique_ptr<Cursor> prepare(const char* sql, const char* step) override {
    return std::make_unique<PgCursor>(*this, sql, step);
  }
  void begin_write(const char* step, bool batched) override {
    if (!batched) {
      exec("BEGIN", step);
      return;
    }
    if (PQenterPipelineMode(conn_) != 1) fail(step, "cannot enter pipeline mode");
    pipelined_ = true;
    send_text("BEGIN", step);
  }
  // One snapshot for every statement of the transaction.
  void begin_read(const char* step) override { exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", step); }
  void commit(const char* step) override {
    if (!pipelined_) {
      exec("COMMIT", step);
      return;
    }
    send_text("COMMIT", step);
    if (PQpipelineSync(conn_) != 1) fail(step, "cannot sync the pipeline");
    std::string first_error = read_to_sync();
    end_pipeline();
    if (!first_error.empty()) {
      for (const std::string& sql : prepared_in_pipeline_) statements_.erase(sql);
      prepared_in_pipeline_.clear();
      raise("postgresql: " + first_error, first_sqlstate_);
    }
    prepared_in_pipeline_.clear();
  }
  void rollback_if_open() noexcept override {
    if (pipelined_) {
      // What was sent is read and dropped; statements prepared in the
      // aborted pipeline never came to be.
      if (PQpipelineSync(conn_) == 1) read_to_sync();
      end_pipeline();
      for (const std::string& sql : prepared_in_pipeline_) statements_.erase(sql);
    }
    prepared_in_pipeline_.clear();
    if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE)
      PQclear(PQexec(conn_, "ROLLBACK"));
  }
  void reconnect() override {
    rollback_if_open();
    if (PQstatus(conn_) == CONNECTION_OK) return;  // a deadlock or a serialization failure: the link is fine
    // Server-side statements died with the old connection; cursors prepare
    // theirs again at their next use.
    statements_.clear();
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) raise("postgresql: reconnect: " + trimmed(PQerrorMessage(conn_)), "");
  }

  bool pipelined() const { return pipelined_; }
  // A statement was sent in pipeline mode; its result comes in order.
  void sent(const char* step) { pending_.push_back(step); }
  // In pipeline mode, after sending a statement whose result is needed:
  // reads the results of everything sent before it, then returns its own.
  PGresult* read_through_last(const char* step) {
    if (PQsendFlushRequest(conn_) != 1 || PQflush(conn_) != 0) fail(step, "cannot flush the pipeline");
    PGresult* last = nullptr;
    std::string first_error;
    first_sqlstate_.clear();
    while (!pending_.empty()) {
      const char* s = pending_.front();
      pending_.pop_front();
      PGresult* r = PQgetResult(conn_);
      while (PGresult* extra = PQgetResult(conn_)) PQclear(extra);  // the NULL that ends a statement's results
      const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && first_error.empty()) {
        first_error = std::string(s) + ": " + trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
        first_sqlstate_ = sqlstate(r);
      }
      if (pending_.empty() && first_error.empty()) {
        last = r;
      } else {
        PQclear(r);
      }
    }
    if (!first_error.empty()) raise("postgresql: " + first_error, first_sqlstate_);
    return last;
  }

  // The server-side statement for `sql` (prepared at its first use).
  const std::string& prepared(const char* sql, const char* step, int* params) {
    auto it = statements_.find(sql);
    if (it == statements_.end()) {
      int n = 0;
      const std::string text = dollar_parameters(sql, &n);
      std::string name = "tandem_" + std::to_string(next_statement_++);
      if (pipelined_) {
        if (PQsendPrepare(conn_, name.c_str(), text.c_str(), 0, nullptr) != 1) fail(step, "cannot prepare");
        sent(step);
        prepared_in_pipeline_.push_back(sql);
      } else {
        PQclear(check(PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr), step));
      }
      it = statements_.emplace(sql, Prepared{std::move(name), n}).first;
    }
    *params = it->second.params;
    return it->second.name;
  }

  // Takes ownership of `r`; returns it when the command succeeded.
  PGresult* check(PGresult* r, const char* step) {
    const ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return r;
    std::string why = trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    if (why.empty()) why = trimmed(PQerrorMessage(conn_));
    const std::string state = sqlstate(r);
    PQclear(r);
    raise(std::string("postgresql: ") + step + ": " + why, state);
  }
  PGconn* conn() const { return conn_; }

  // Throws `message` as an Error of kind unavailable when another attempt
  // on a new connection may succeed: the connection is gone, the server
  // is shutting down or starting, or the transaction lost a deadlock or a
  // serialization conflict; else of kind invalid.
  [[noreturn]] void raise(const std::string& message, const std::string& state) const {
    const bool transient = PQstatus(conn_) != CONNECTION_OK || state.starts_with("08") || state == "57P01" ||
                           state == "57P02" || state == "57P03" || state == "40001" || state == "40P01";
    throw Error(message, ErrorContext{name_, "", "", ""}, transient ? ErrorKind::unavailable : ErrorKind::invalid);
  }

 private:
  struct Prepared {
    std::string name;
    int params = 0;
  };
  static std::string trimmed(const char* message) {
    std::string m = message ? message : "";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
  }

  [[noreturn]] void fail(const char* step, const char* what) {
    raise(std::string("postgresql: ") + step + ": " + what + ": " + trimmed(PQerrorMessage(conn_)), "");
  }
  // The SQLSTATE code of a failed result ("" without one).
  static std::string sqlstate(const PGresult* r) {
    const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    return code ? code : "";
  }
  // A statement without parameters, sent in pipeline mode.
  void send_text(const char* sql, const char* step) {
    if (PQsendQueryParams(conn_, sql, 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) fail(step, "cannot send");
    sent(step);
  }
  // Reads every result up to the pipeline's sync point; the first error
  // (its SQLSTATE in first_sqlstate_).
  std::string read_to_sync() noexcept {
    std::string first_error;
    first_sqlstate_.clear();
    const char* s = "";
    for (;;) {
      PGresult* r = PQgetResult(conn_);
      if (!r) {  // the end of one statement's results, or a lost connection
        if (PQstatus(conn_) != CONNECTION_OK) {
          if (first_error.empty()) first_error = trimmed(PQerrorMessage(conn_));
          break;
        }
        continue;
      }
      const ExecStatusType st = PQresultStatus(r);
      if (st == PGRES_PIPELINE_SYNC) {
        PQclear(r);
        break;
      }
      if (!pending_.empty()) s = pending_.front(), pending_.pop_front();
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_PIPELINE_ABORTED && first_error.empty()) {
        first_error = std::string(s) + ": " + trimmed(PQresultErrorMessage(r));
        first_sqlstate_ = sqlstate(r);
      }
      PQclear(r);
      if (PQstatus(conn_) != CONNECTION_OK) {
        if (first_error.empty()) first_error = trimmed(PQerrorMessage(conn_));
        break;
      }
    }
    pending_.clear();
    return first_error;
  }
  void end_pipeline() noexcept {
    PQexitPipelineMode(conn_);
    pipelined_ = false;
    pending_.clear();
  }

  PGconn* conn_ = nullptr;
  std::string name_;
  std::unordered_map<std::string, Prepared> statements_;  // by SQL text
  int next_statement_ = 0;
  bool pipelined_ = false;
  std::deque<const char*> pending_;                 // steps sent in the pipeline, results not read
  std::vector<std::string> prepared_in_pipeline_;  // undone by a rollback
  std::string first_sqlstate_;                      // of the first error a pipeline read met
};

PgCursor::PgCursor(PgDatabase& db, const char* sql, const char* step) : db_(db), sql_(sql), step_(step) {
  // Prepared on the server at its first use, not here: a statement made
  // while the connection is down must not fail before a retry can help.
  int params = 0;
  dollar_parameters(sql, &params);
  values_.resize(size_t(params));
  formats_.assign(size_t(params), 0);
}

const std::string& PgCursor::db_name() const { return db_.name(); }

void PgCursor::set(int index, std::string bytes, int format) {
  check(index >= 1 && size_t(index) <= values_.size(),
        "parameter ?" + std::to_string(index) + " of a statement with " + std::to_string(values_.size()),
        ErrorContext{db_.name(), "", "", step_});
  values_[size_t(index - 1)] = std::move(bytes);
  formats_[size_t(index - 1)] = format;
}

void PgCursor::send() {
  std::vector<const char*> ptrs(values_.size());
  std::vector<int> lengths(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    ptrs[i] = values_[i] ? values_[i]->data() : nullptr;
    lengths[i] = values_[i] ? int(values_[i]->size()) : 0;
  }
  int params = 0;
  const std::string& statement = db_.prepared(sql_.c_str(), step_, &params);
  if (!db_.pipelined()) {
    result_ = db_.check(PQexecPrepared(db_.conn(), statement.c_str(), int(values_.size()), ptrs.data(),
                                       lengths.data(), formats_.data(), 0),
                        step_);
    return;
  }
  // libpq copies the parameters into its output buffer here.
  if (PQsendQueryPrepared(db_.conn(), statement.c_str(), int(values_.size()), ptrs.data(), lengths.data(),
                          formats_.data(), 0) != 1)
    db_.raise(std::string("postgresql: ") + step_ + ": cannot send: " + PQerrorMessage(db_.conn()), "");
  db_.sent(step_);
}

bool PgCursor::step() {
  if (row_ < 0) {
    send();
    if (db_.pipelined()) result_ = db_.read_through_last(step_);
    row_ = 0;
  } else {
    ++row_;
  }
  return result_ && row_ < PQntuples(result_);
}

void PgCursor::run_later() {
  if (!db_.pipelined()) {
    step();
    return;
  }
  send();
  row_ = 0;  // done, as far as this cursor goes: no rows to read
}

std::vector<float> PgCursor::floats(int column) const {
  if (is_null(column)) return {};
  size_t bytes = 0;
  unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(value(column)), &bytes);
  check(raw != nullptr, "cannot read a bytea value", ErrorContext{db_.name(), "", "", step_});
  std::vector<float> out;
  if (bytes % sizeof(float) == 0) {
    out.resize(bytes / sizeof(float));
    if (bytes) std::memcpy(out.data(), raw, bytes);
  }
  PQfreemem(raw);
  check(bytes % sizeof(float) == 0, "a float vector of " + std::to_string(bytes) + " bytes",
        ErrorContext{db_.name(), "", "", step_});
  return out;
}

}  // namespace

bool built_with_postgres() { return true; }

std::unique_ptr<Database> open_postgres(const std::string& url) { return std::make_unique<PgDatabase>(url); }

#else

bool built_with_postgres() { return false; }

std::unique_ptr<Database> open_postgres(const std::string& url) {
  throw Error::unsupported("this tandem was built without libpq (install libpq-dev and rebuild) for " +
                           without_password(url));
}

#endif

}  // namespace tandem::pipeline::sql
