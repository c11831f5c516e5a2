// The PostgreSQL driver of pipeline/sql.h, on libpq (Debian's libpq-dev).
// Statements are prepared once per connection and SQL text (the catalog's
// SQL is a fixed set of strings), their ?N parameters rewritten as $N and
// sent as text (numbers with every significant digit, so a double comes
// back bit for bit) or, for float vectors, as binary bytea.
#include "pipeline/sql.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// ?N placeholders as PostgreSQL's $N, outside quoted text; the highest N.
std::string dollar_parameters(const char* sql, int* count) {
  std::string out;
  *count = 0;
  char quote = 0;
  for (const char* p = sql; *p; ++p) {
    if (quote) {
      if (*p == quote) quote = 0;
    } else if (*p == '\'' || *p == '"') {
      quote = *p;
    } else if (*p == '?' && p[1] >= '0' && p[1] <= '9') {
      out += '$';
      int n = 0;
      while (p[1] >= '0' && p[1] <= '9') n = n * 10 + (*++p - '0'), out += *p;
      *count = std::max(*count, n);
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
  void bind(int index, std::string_view text) override { set(index, std::string(text), 0); }
  void bind(int index, std::span<const float> values) override {
    set(index, std::string(reinterpret_cast<const char*>(values.data()), values.size_bytes()), 1);
  }
  bool step() override;
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
  const char* value(int column) const { return PQgetvalue(result_, row_, column); }

  PgDatabase& db_;
  std::string statement_;  // the server-side prepared statement's name
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
      throw Error("postgresql: connect: " + why, ErrorContext{name_, "", "", ""});
    }
    // NOTICEs ("relation already exists, skipping") are not errors.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgDatabase() override { PQfinish(conn_); }

  Dialect dialect() const override { return Dialect::postgresql; }
  const std::string& name() const override { return name_; }
  void exec(const char* sql, const char* step) override { PQclear(check(PQexec(conn_, sql), step)); }
  std::unique_ptr<Cursor> prepare(const char* sql, const char* step) override {
    return std::make_unique<PgCursor>(*this, sql, step);
  }
  void begin_write(const char* step) override { exec("BEGIN", step); }
  // One snapshot for every statement of the transaction.
  void begin_read(const char* step) override { exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", step); }
  void commit(const char* step) override { exec("COMMIT", step); }
  void rollback_if_open() noexcept override {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
  }

  // The server-side statement for `sql` (prepared at its first use).
  const std::string& prepared(const char* sql, const char* step, int* params) {
    auto it = statements_.find(sql);
    if (it == statements_.end()) {
      int n = 0;
      const std::string text = dollar_parameters(sql, &n);
      std::string name = "tandem_" + std::to_string(statements_.size());
      PQclear(check(PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr), step));
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
    PQclear(r);
    throw Error(std::string("postgresql: ") + step + ": " + why, ErrorContext{name_, "", "", ""});
  }
  PGconn* conn() const { return conn_; }

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

  PGconn* conn_ = nullptr;
  std::string name_;
  std::unordered_map<std::string, Prepared> statements_;  // by SQL text
};

PgCursor::PgCursor(PgDatabase& db, const char* sql, const char* step) : db_(db), step_(step) {
  int params = 0;
  statement_ = db_.prepared(sql, step, &params);
  values_.resize(size_t(params));
  formats_.assign(size_t(params), 0);
}

void PgCursor::set(int index, std::string bytes, int format) {
  check(index >= 1 && size_t(index) <= values_.size(),
        "parameter ?" + std::to_string(index) + " of a statement with " + std::to_string(values_.size()),
        ErrorContext{db_.name(), "", "", step_});
  values_[size_t(index - 1)] = std::move(bytes);
  formats_[size_t(index - 1)] = format;
}

bool PgCursor::step() {
  if (row_ < 0) {
    std::vector<const char*> ptrs(values_.size());
    std::vector<int> lengths(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) {
      ptrs[i] = values_[i] ? values_[i]->data() : nullptr;
      lengths[i] = values_[i] ? int(values_[i]->size()) : 0;
    }
    result_ = db_.check(PQexecPrepared(db_.conn(), statement_.c_str(), int(values_.size()), ptrs.data(),
                                       lengths.data(), formats_.data(), 0),
                        step_);
    row_ = 0;
  } else {
    ++row_;
  }
  return row_ < PQntuples(result_);
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
