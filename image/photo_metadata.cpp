#include "image/photo_metadata.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "image/decode.h"
#include "image/exif_data.h"
#include "image/exif_orientation.h"
#include "image/heif_decoder.h"
#include "image/webp_decoder.h"

namespace tandem::image {

namespace {

// Tags by number: libexif's names for the newer ones (OffsetTime*,
// LensModel) differ between its versions.
constexpr unsigned kMake = 0x010F, kModel = 0x0110, kDateTime = 0x0132;
constexpr unsigned kExposureTime = 0x829A, kFNumber = 0x829D, kIso = 0x8827;
constexpr unsigned kDateTimeOriginal = 0x9003, kDateTimeDigitized = 0x9004;
constexpr unsigned kOffsetTime = 0x9010, kOffsetTimeOriginal = 0x9011, kOffsetTimeDigitized = 0x9012;
constexpr unsigned kFocalLength = 0x920A, kLensModel = 0xA434;
constexpr unsigned kGpsLatitudeRef = 0x0001, kGpsLatitude = 0x0002, kGpsLongitudeRef = 0x0003,
                   kGpsLongitude = 0x0004, kGpsAltitudeRef = 0x0005, kGpsAltitude = 0x0006;

constexpr size_t kMaxText = 128;            // longer camera names are cut

class Reader {
 public:
  explicit Reader(ExifData* data) : data_(data), order_(exif_data_get_byte_order(data)) {}

  const ExifEntry* entry(ExifIfd ifd, unsigned tag) const {
    const ExifEntry* e = exif_content_get_entry(data_->ifd[ifd], static_cast<ExifTag>(tag));
    return e && e->data && e->size > 0 ? e : nullptr;
  }

  // An ASCII tag as printable ASCII (anything else becomes '?', so the
  // catalog and its JSON exports always hold valid UTF-8), trimmed.
  std::string text(ExifIfd ifd, unsigned tag) const {
    const ExifEntry* e = entry(ifd, tag);
    if (!e || (e->format != EXIF_FORMAT_ASCII && e->format != EXIF_FORMAT_UNDEFINED)) return {};
    std::string s;
    for (size_t i = 0; i < e->size && s.size() < kMaxText; ++i) {
      const unsigned char c = e->data[i];
      if (c == 0) break;
      s.push_back(c >= 0x20 && c < 0x7F ? char(c) : '?');
    }
    const size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  }

  // Component k of a RATIONAL (or SRATIONAL) tag; nothing for a zero
  // denominator.
  std::optional<double> rational(ExifIfd ifd, unsigned tag, unsigned k = 0) const {
    const ExifEntry* e = entry(ifd, tag);
    if (!e || k >= e->components) return std::nullopt;
    if (e->format == EXIF_FORMAT_RATIONAL && e->size >= 8 * (k + 1)) {
      const ExifRational r = exif_get_rational(e->data + 8 * k, order_);
      if (r.denominator == 0) return std::nullopt;
      return double(r.numerator) / double(r.denominator);
    }
    if (e->format == EXIF_FORMAT_SRATIONAL && e->size >= 8 * (k + 1)) {
      const ExifSRational r = exif_get_srational(e->data + 8 * k, order_);
      if (r.denominator == 0) return std::nullopt;
      return double(r.numerator) / double(r.denominator);
    }
    return std::nullopt;
  }

  // The first component of an integer tag (BYTE, SHORT or LONG).
  std::optional<int64_t> integer(ExifIfd ifd, unsigned tag) const {
    const ExifEntry* e = entry(ifd, tag);
    if (!e || e->components < 1) return std::nullopt;
    if (e->format == EXIF_FORMAT_BYTE) return int64_t(e->data[0]);
    if (e->format == EXIF_FORMAT_SHORT && e->size >= 2) return int64_t(exif_get_short(e->data, order_));
    if (e->format == EXIF_FORMAT_LONG && e->size >= 4) return int64_t(exif_get_long(e->data, order_));
    return std::nullopt;
  }

 private:
  ExifData* data_;
  ExifByteOrder order_;
};

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// "YYYY:MM:DD HH:MM:SS" (EXIF's form) as "YYYY-MM-DDTHH:MM:SS"; empty for
// anything else or an impossible date (before the first photograph, far in
// the future, the 31st of April, the all-zero date of an unset clock).
std::string iso_date(const std::string& exif) {
  int y, mo, d, h, mi, s;
  char tail;
  if (exif.size() != 19 || std::sscanf(exif.c_str(), "%4d:%2d:%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) != 6)
    return {};
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1826 || y > 2200 || mo < 1 || mo > 12 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return {};
  if (d < 1 || d > kDays[size_t(mo - 1)] + (mo == 2 && leap(y) ? 1 : 0)) return {};
  char out[32];  // 19 used: the fields are range-checked above
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d", y, mo, d, h, mi, s);
  return out;
}

// "+HH:MM" / "-HH:MM" within the world's time zones; empty otherwise.
std::string offset(const std::string& exif) {
  int h, m;
  char sign, tail;
  if (exif.size() != 6 || std::sscanf(exif.c_str(), "%c%2d:%2d%c", &sign, &h, &m, &tail) != 3) return {};
  if ((sign != '+' && sign != '-') || h < 0 || h > 14 || m < 0 || m > 59) return {};
  return exif;
}

// Degrees from GPS's (degrees, minutes, seconds) rationals and its N/S or
// E/W reference; nothing beyond `limit` degrees or for a reference that is
// neither.
std::optional<double> coordinate(const Reader& r, unsigned tag, unsigned ref_tag, char negative, char positive,
                                 double limit) {
  const std::optional<double> d = r.rational(EXIF_IFD_GPS, tag, 0), m = r.rational(EXIF_IFD_GPS, tag, 1),
                              s = r.rational(EXIF_IFD_GPS, tag, 2);
  if (!d) return std::nullopt;
  const double v = *d + m.value_or(0) / 60 + s.value_or(0) / 3600;
  if (!std::isfinite(v) || v < 0 || v > limit || m.value_or(0) >= 60 || s.value_or(0) >= 60) return std::nullopt;
  const std::string ref = r.text(EXIF_IFD_GPS, ref_tag);
  if (ref.empty() || ref[0] == positive) return v;
  if (ref[0] == negative) return -v;
  return std::nullopt;
}

// A positive value within (0, limit], else nothing.
std::optional<double> positive(std::optional<double> v, double limit) {
  return v && std::isfinite(*v) && *v > 0 && *v <= limit ? v : std::nullopt;
}

void read_date(const Reader& r, PhotoMetadata& m) {
  const std::pair<std::pair<ExifIfd, unsigned>, unsigned> order[] = {
      {{EXIF_IFD_EXIF, kDateTimeOriginal}, kOffsetTimeOriginal},
      {{EXIF_IFD_EXIF, kDateTimeDigitized}, kOffsetTimeDigitized},
      {{EXIF_IFD_0, kDateTime}, kOffsetTime}};
  for (const auto& [date, offset_tag] : order) {
    m.taken_at = iso_date(r.text(date.first, date.second));
    if (m.taken_at.empty()) continue;
    m.taken_offset = offset(r.text(EXIF_IFD_EXIF, offset_tag));
    return;
  }
}

void read_gps(const Reader& r, PhotoMetadata& m) {
  m.latitude = coordinate(r, kGpsLatitude, kGpsLatitudeRef, 'S', 'N', 90);
  m.longitude = coordinate(r, kGpsLongitude, kGpsLongitudeRef, 'W', 'E', 180);
  if (!m.latitude || !m.longitude) m.latitude = m.longitude = std::nullopt;  // half a position is none
  const std::optional<double> alt = r.rational(EXIF_IFD_GPS, kGpsAltitude);
  if (m.latitude && alt && std::isfinite(*alt) && *alt < 100000)
    m.altitude_m = r.integer(EXIF_IFD_GPS, kGpsAltitudeRef).value_or(0) == 1 ? -*alt : *alt;
}

}  // namespace

PhotoMetadata metadata_from_exif(std::span<const uint8_t> exif_payload) {
  PhotoMetadata m;
  // Every tag kept as written: libexif's table lacks the newer ones
  // (OffsetTime*, LensModel in older versions).
  const ExifDataPtr data = load_exif(exif_payload);
  if (!data) return m;
  const Reader r(data.get());
  read_date(r, m);
  m.make = r.text(EXIF_IFD_0, kMake);
  m.model = r.text(EXIF_IFD_0, kModel);
  m.lens = r.text(EXIF_IFD_EXIF, kLensModel);
  m.exposure_s = positive(r.rational(EXIF_IFD_EXIF, kExposureTime), 24 * 3600);
  m.f_number = positive(r.rational(EXIF_IFD_EXIF, kFNumber), 1000);
  m.focal_length_mm = positive(r.rational(EXIF_IFD_EXIF, kFocalLength), 100000);
  if (const std::optional<int64_t> iso = r.integer(EXIF_IFD_EXIF, kIso); iso && *iso > 0 && *iso <= 10000000)
    m.iso = int(*iso);
  read_gps(r, m);
  return m;
}

PhotoMetadata read_photo_metadata(std::span<const uint8_t> file_bytes) {
  switch (sniff_format(file_bytes)) {
    case ImageFormat::jpeg: return metadata_from_exif(find_jpeg_exif(file_bytes));
    case ImageFormat::webp: return metadata_from_exif(exif_payload_of(webp_exif_block(file_bytes)));
    case ImageFormat::heif: return metadata_from_exif(exif_payload_of(heif_exif_block(file_bytes)));
    default: return {};  // PNG's eXIf may follow the pixels: not worth a second pass here
  }
}

}  // namespace tandem::image
