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

void Catalog::write_meta(int64_t file_id, const FileRecord& r) {
  {
    Statement::Use use(*delete_meta_);
    delete_meta_->bind(1, file_id);
    delete_meta_->run_later();
  }
  const image::PhotoMetadata& m = r.meta;
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
