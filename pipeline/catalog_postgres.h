#pragma once
// The catalog's schema in PostgreSQL: the tables, columns and indexes of
// the SQLite catalog's latest version (pipeline/catalog.cpp), in
// PostgreSQL's types, and the version stamp a tandem_meta row keeps.
#include "pipeline/sql.h"

namespace tandem::pipeline {

// The schema version tandem_meta records for this layout.
inline constexpr int kPostgresSchemaVersion = 6;

// Creates the schema in an empty database, accepts one at this version,
// refuses a newer tandem's or a database some other program filled.
// Several workers may open a new database at once: one creates, the
// others wait for it and find the schema there.
void prepare_postgres_catalog(sql::Database& db);

}  // namespace tandem::pipeline
