#pragma once
// What a gallery page asks for: the filters of GET /api/photos, parsed and
// checked from the request's query, and the keyset cursor that continues a
// page. Photos come newest date taken first, then those with no date,
// newest tagged first; a cursor names the last photo shown (its date and
// id), so a page never repeats or skips a photo while `tag` adds others.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tandem::gallery {

// A request's query parameters (httplib::Params is this type).
using QueryParams = std::multimap<std::string, std::string>;

struct PhotoFilter {
  std::string tag;        // a tag label, exactly
  int64_t person = 0;     // a person id; 0: any
  std::string from, to;   // "YYYY-MM-DD", date taken in [from, to); empty: open
  std::string make, model;                   // camera; empty: any
  std::optional<std::array<double, 4>> box;  // south, west, north, east (degrees)
  std::vector<std::string> words;            // the search box's words

  // Whether a photo without a date taken can match (no date range asked).
  bool admits_undated() const { return from.empty() && to.empty(); }
};

struct Cursor {
  bool dated = true;     // false: the page continues among photos with no date
  std::string taken_at;  // the last photo's date taken (dated only)
  int64_t id = 0;        // the last photo's id
};

struct PhotoQuery {
  PhotoFilter filter;
  std::optional<Cursor> after;  // none: the first page
  int limit = 60;
};

constexpr int kMaxPageSize = 200;

// Parses GET /api/photos's parameters; throws Error with a message fit for
// the client (which parameter, what was wrong) on a bad one. A month
// ("YYYY-MM") is accepted for `from` (its first day) and `to` (the month
// included: the first day of the next).
PhotoQuery parse_photo_query(const QueryParams& params);

std::string encode_cursor(const Cursor& c);
// Throws Error on anything encode_cursor cannot have written.
Cursor decode_cursor(const std::string& text);

// `text` with LIKE's wildcards (% _) and the escape character (\) escaped,
// for LIKE ... ESCAPE '\'.
std::string like_escape(const std::string& text);

}  // namespace tandem::gallery
