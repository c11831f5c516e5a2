// The photo_meta table: what the camera wrote in each photo's EXIF
// (image/photo_metadata.h), one row per file that has any.
#include <optional>

#include "pipeline/catalog.h"
#include "pipeline/sql.h"

namespace tandem::pipeline {

using sql::Statement;

namespace {

constexpr const char* kInsertMeta = R"sql(
INSERT INTO photo_meta (file_id, taken_at, taken_offset, make, model, lens, exposure_s, f_number, iso,
                        focal_length_mm, latitude, longitude, altitude_m)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
)sql";

constexpr const char* kSelectMeta = R"sql(
SELECT m.file_id, m.taken_at, m.taken_offset, m.make, m.model, m.lens, m.exposure_s, m.f_number, m.iso,
       m.focal_length_mm, m.latitude, m.longitude, m.altitude_m
FROM photo_meta m JOIN files f ON f.id = m.file_id
WHERE f.model_id = ?1
)sql";

}  // namespace

void Catalog::prepare_meta() {
  delete_meta_ = std::make_unique<Statement>(*db_, "DELETE FROM photo_meta WHERE file_id = ?1", "delete old metadata");
  insert_meta_ = std::make_unique<Statement>(*db_, kInsertMeta, "write metadata");
  select_meta_ = std::make_unique<Statement>(*db_, kSelectMeta, "read metadata");
}

void Catalog::write_meta(int64_t file_id, const image::PhotoMetadata& m) {
  {
    Statement::Use use(*delete_meta_);
    delete_meta_->bind(1, file_id);
    delete_meta_->run_later();
  }
  if (m.empty() && m.taken_offset.empty()) return;
  Statement& s = *insert_meta_;
  Statement::Use use(s);
  s.bind(1, file_id);
  s.bind_or_null(2, m.taken_at);
  s.bind_or_null(3, m.taken_offset);
  s.bind_or_null(4, m.make);
  s.bind_or_null(5, m.model);
  s.bind_or_null(6, m.lens);
  s.bind_or_null(7, m.exposure_s);
  s.bind_or_null(8, m.f_number);
  if (m.iso) s.bind(9, int64_t(*m.iso));
  s.bind_or_null(10, m.focal_length_mm);
  s.bind_or_null(11, m.latitude);
  s.bind_or_null(12, m.longitude);
  s.bind_or_null(13, m.altitude_m);
  s.run_later();
}

bool Catalog::metadata_pending(const std::string& path, const std::string& model_id) {
  if (!metadata_pending_) return false;
  Statement s(*db_,
              "SELECT 1 FROM files f JOIN meta_pending p ON p.file_id = f.id WHERE f.path = ?1 AND "
              "f.model_id = ?2",
              "look up pending metadata");
  s.bind(1, path);
  s.bind(2, model_id);
  return s.step();
}

void Catalog::backfill_metadata(
    std::span<const std::pair<std::string, image::PhotoMetadata>> photos,
    const std::string& model_id) {
  sql::in_transaction(*db_, true, "record metadata", [&] {
    Statement find(*db_, "SELECT id FROM files WHERE path = ?1 AND model_id = ?2", "look up file");
    Statement done(*db_, "DELETE FROM meta_pending WHERE file_id = ?1",
                   "take off pending metadata");
    for (const auto& [path, meta] : photos) {
      int64_t id = 0;
      {
        Statement::Use use(find);
        find.bind(1, path);
        find.bind(2, model_id);
        if (!find.step()) continue;  // gone since it was listed
        id = find.int64(0);
      }
      write_meta(id, meta);
      Statement::Use use(done);
      done.bind(1, id);
      done.run();
    }
  });
}

void Catalog::read_meta(const std::string& model_id, std::vector<FileRecord>& out,
                        const std::unordered_map<int64_t, size_t>& index) {
  Statement& s = *select_meta_;
  Statement::Use use(s);
  s.bind(1, model_id);
  while (s.step()) {
    const auto at = index.find(s.int64(0));
    if (at == index.end()) continue;
    image::PhotoMetadata& m = out[at->second].meta;
    m.taken_at = s.text(1);
    m.taken_offset = s.text(2);
    m.make = s.text(3);
    m.model = s.text(4);
    m.lens = s.text(5);
    m.exposure_s = s.real_or_null(6);
    m.f_number = s.real_or_null(7);
    if (!s.is_null(8)) m.iso = int(s.int64(8));
    m.focal_length_mm = s.real_or_null(9);
    m.latitude = s.real_or_null(10);
    m.longitude = s.real_or_null(11);
    m.altitude_m = s.real_or_null(12);
  }
}

}  // namespace tandem::pipeline
