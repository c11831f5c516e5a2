#pragma once
// The PostgreSQL server tests/postgres_server.py starts for the tests that
// need one (initdb into a temporary folder, a unix socket): its URLs, and
// a skip where it is not running.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "pipeline/sql.h"

namespace tandem::testing {

// postgresql:///DB on the test server's socket, or "" when there is none.
inline std::string test_server_url(const std::string& db) {
  const char* host = std::getenv("TANDEM_TEST_POSTGRES_HOST");
  const char* user = std::getenv("TANDEM_TEST_POSTGRES_USER");
  if (!host || !user) return "";
  return "postgresql:///" + db + "?host=" + host + "&user=" + user;
}

// A new, empty database on the test server.
inline std::string fresh_test_database(const std::string& db) {
  std::unique_ptr<pipeline::sql::Database> admin = pipeline::sql::open_postgres(test_server_url("postgres"));
  admin->exec(("DROP DATABASE IF EXISTS " + db).c_str(), "drop the test database");
  admin->exec(("CREATE DATABASE " + db).c_str(), "create the test database");
  return test_server_url(db);
}

inline bool have_test_server() {
  return !test_server_url("postgres").empty() && pipeline::sql::built_with_postgres();
}

}  // namespace tandem::testing

#define TANDEM_REQUIRE_POSTGRES()                 \
  if (!tandem::testing::have_test_server())       \
  GTEST_SKIP() << "no PostgreSQL test server (ctest -R catalog.postgres starts one)"
