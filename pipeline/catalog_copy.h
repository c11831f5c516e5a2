#pragma once
// `tandem catalog copy SRC DST`: a whole catalog from one database to the
// other (SQLite file <-> PostgreSQL), for moving a collection's results
// onto a server for many workers, or back into one file to take along.
#include <cstdint>
#include <string>

namespace tandem::pipeline {

struct CopyCounts {
  int64_t files = 0, tags = 0, objects = 0, people = 0, faces = 0, metadata = 0, roots = 0;
};

// Copies every row of `src` into `dst` (created or migrated first), ids
// kept, in one transaction on each side: `dst` gets all of it or nothing.
// `dst` must hold no files yet (merging two catalogs is not a copy).
CopyCounts copy_catalog(const std::string& src, const std::string& dst);

}  // namespace tandem::pipeline
