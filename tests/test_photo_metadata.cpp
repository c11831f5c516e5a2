// What a camera wrote, read with libexif (image/photo_metadata.h): a real
// camera's file against the exiv2 tool's reading of it, and mutated EXIF
// that never crashes the reader nor yields an implausible value.
// (tests/metadata/check_exif.py covers the values `tandem tag` stores.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <regex>
#include <string>

#include "image/exif_orientation.h"
#include "image/photo_metadata.h"
#include "image_test_util.h"

using namespace tandem::image;
using namespace tandem::image::testing;

namespace {

// {key: value} as `exiv2 -q -Pkv FILE` prints them; empty without the tool.
std::map<std::string, std::string> exiv2_values(const std::string& path) {
  std::map<std::string, std::string> out;
  FILE* p = popen(("exiv2 -q -Pkv '" + path + "' 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    const size_t space = s.find(' ');
    if (space == std::string::npos) continue;
    const size_t value = s.find_first_not_of(' ', space);
    out[s.substr(0, space)] = value == std::string::npos ? "" : s.substr(value);
  }
  pclose(p);
  return out;
}

double rational(const std::string& text) {
  const size_t slash = text.find('/');
  return std::stod(text.substr(0, slash)) / std::stod(text.substr(slash + 1));
}

// Every value present is one a camera could have written.
void expect_plausible(const PhotoMetadata& m) {
  static const std::regex date(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})"), offset(R"([+-]\d{2}:\d{2})");
  if (!m.taken_at.empty()) EXPECT_TRUE(std::regex_match(m.taken_at, date)) << m.taken_at;
  if (!m.taken_offset.empty()) EXPECT_TRUE(std::regex_match(m.taken_offset, offset)) << m.taken_offset;
  for (const std::string* s : {&m.make, &m.model, &m.lens}) {
    EXPECT_LE(s->size(), 128u);
    for (char c : *s) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << int(c);
  }
  if (m.latitude) EXPECT_LE(std::fabs(*m.latitude), 90.0);
  if (m.longitude) EXPECT_LE(std::fabs(*m.longitude), 180.0);
  EXPECT_EQ(m.latitude.has_value(), m.longitude.has_value());
  for (const std::optional<double>* v : {&m.exposure_s, &m.f_number, &m.focal_length_mm})
    if (*v) EXPECT_TRUE(std::isfinite(**v) && **v > 0);
  if (m.iso) EXPECT_GT(*m.iso, 0);
}

}  // namespace

// darknet's kite.jpg, a Canon's file, as exiv2 reads it.
TEST(PhotoMetadata, RealCameraFileAsExiv2ReadsIt) {
  const std::string path = photo_path("kite");
  const std::map<std::string, std::string> v = exiv2_values(path);
  if (v.empty()) GTEST_SKIP() << "the exiv2 tool is missing";
  const PhotoMetadata m = read_photo_metadata(read_bytes(path));
  EXPECT_EQ(m.make, v.at("Exif.Image.Make"));
  EXPECT_EQ(m.model, v.at("Exif.Image.Model"));
  std::string want = v.at("Exif.Photo.DateTimeOriginal");
  want[4] = want[7] = '-', want[10] = 'T';
  EXPECT_EQ(m.taken_at, want);
  EXPECT_DOUBLE_EQ(*m.exposure_s, rational(v.at("Exif.Photo.ExposureTime")));
  EXPECT_DOUBLE_EQ(*m.f_number, rational(v.at("Exif.Photo.FNumber")));
  EXPECT_EQ(*m.iso, std::stoi(v.at("Exif.Photo.ISOSpeedRatings")));
  if (v.count("Exif.Photo.FocalLength")) EXPECT_DOUBLE_EQ(*m.focal_length_mm, rational(v.at("Exif.Photo.FocalLength")));
  EXPECT_EQ(m.latitude.has_value(), v.count("Exif.GPSInfo.GPSLatitude") > 0);
}

TEST(PhotoMetadata, NoExifIsEmpty) {
  EXPECT_TRUE(read_photo_metadata({}).empty());
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  EXPECT_TRUE(read_photo_metadata(png).empty());
  const std::vector<uint8_t> header_only = {'E', 'x', 'i', 'f', 0, 0};
  EXPECT_TRUE(metadata_from_exif(header_only).empty());
}

// Byte flips and cuts in the camera's EXIF: never a crash, never an
// implausible value.
TEST(PhotoMetadata, MutatedExifGivesPlausibleValuesOrNone) {
  const std::vector<uint8_t> kite = read_bytes(photo_path("kite"));
  const std::span<const uint8_t> camera = find_jpeg_exif(kite);
  ASSERT_GT(camera.size(), 500u);
  std::mt19937 rng(99);
  int with_date = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<uint8_t> p(camera.begin(), camera.end());
    if (trial % 3 == 0) {
      p.resize(std::uniform_int_distribution<size_t>(0, p.size() - 1)(rng));
    } else {
      for (int k = 0; k <= trial % 6; ++k)
        p[std::uniform_int_distribution<size_t>(6, p.size() - 1)(rng)] ^= uint8_t(1 + rng() % 255);
    }
    const PhotoMetadata m = metadata_from_exif(p);
    expect_plausible(m);
    with_date += !m.taken_at.empty();
  }
  EXPECT_GT(with_date, 0);  // most mutations leave the date alone
}
