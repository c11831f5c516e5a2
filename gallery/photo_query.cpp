#include "gallery/photo_query.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace tandem::gallery {

namespace {

// Longer values than any label, name or date: refused, not truncated.
constexpr size_t kMaxValue = 200;
constexpr size_t kMaxWords = 8;

std::optional<std::string> param(const QueryParams& p, const char* name) {
  auto it = p.find(name);
  if (it == p.end()) return std::nullopt;
  check(p.count(name) == 1, std::string("parameter '") + name + "' given more than once");
  check(it->second.size() <= kMaxValue, std::string("parameter '") + name + "' is too long");
  return it->second;
}

int64_t parse_id(const std::string& text, const char* what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  check(ec == std::errc() && end == text.data() + text.size() && v > 0,
        std::string(what) + " is not a positive integer: '" + text + "'");
  return v;
}

double parse_degrees(const std::string& text) {
  // strtod accepts "inf" and "nan": both are refused below.
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  check(!text.empty() && end == text.c_str() + text.size() && errno == 0 && std::isfinite(v),
        "box: not a number: '" + text + "'");
  return v;
}

bool digits(const std::string& s, size_t at, size_t n) {
  for (size_t i = at; i < at + n; ++i)
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  return true;
}

// "YYYY-MM-DD" or "YYYY-MM" as the first day of the date range it starts
// (from) or of the day after the range it ends (to, month included).
std::string parse_date(const std::string& s, bool end_of_range, const char* name) {
  const std::string bad = std::string(name) + ": not a date (YYYY-MM-DD or YYYY-MM): '" + s + "'";
  check((s.size() == 7 || s.size() == 10) && digits(s, 0, 4) && s[4] == '-' && digits(s, 5, 2), bad);
  int year = std::stoi(s.substr(0, 4)), month = std::stoi(s.substr(5, 2));
  check(month >= 1 && month <= 12, bad);
  if (s.size() == 10) {
    check(s[7] == '-' && digits(s, 8, 2), bad);
    int day = std::stoi(s.substr(8, 2));
    check(day >= 1 && day <= 31, bad);
    return s;
  }
  if (end_of_range && ++month == 13) month = 1, ++year;
  char out[16];
  std::snprintf(out, sizeof out, "%04d-%02d-01", year, month);
  return out;
}

std::vector<std::string> split_words(const std::string& q) {
  std::vector<std::string> words;
  std::istringstream in(q);
  for (std::string w; in >> w;) words.push_back(w);
  check(words.size() <= kMaxWords, "q: more than " + std::to_string(kMaxWords) + " words");
  return words;
}

std::array<double, 4> parse_box(const std::string& text) {
  std::array<double, 4> box{};
  size_t at = 0;
  for (int i = 0; i < 4; ++i) {
    size_t comma = text.find(',', at);
    check((comma == std::string::npos) == (i == 3), "box: want SOUTH,WEST,NORTH,EAST: '" + text + "'");
    box[size_t(i)] = parse_degrees(text.substr(at, comma == std::string::npos ? comma : comma - at));
    at = comma + 1;
  }
  check(box[0] >= -90 && box[2] <= 90 && box[0] <= box[2] && box[1] >= -180 && box[3] <= 180 &&
            box[1] <= box[3],
        "box: want SOUTH <= NORTH within [-90, 90] and WEST <= EAST within [-180, 180]");
  return box;
}

}  // namespace

PhotoQuery parse_photo_query(const QueryParams& params) {
  static const char* const kKnown[] = {"tag", "person", "from", "to", "make", "model",
                                       "box", "q",      "limit", "cursor", "token"};
  for (const auto& [name, value] : params) {
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    check(known, "unknown parameter '" + name.substr(0, 40) + "'");
  }
  PhotoQuery q;
  PhotoFilter& f = q.filter;
  if (auto v = param(params, "tag")) f.tag = *v;
  if (auto v = param(params, "person")) f.person = parse_id(*v, "person");
  if (auto v = param(params, "from")) f.from = parse_date(*v, false, "from");
  if (auto v = param(params, "to")) f.to = parse_date(*v, true, "to");
  if (auto v = param(params, "make")) f.make = *v;
  if (auto v = param(params, "model")) f.model = *v;
  if (auto v = param(params, "box")) f.box = parse_box(*v);
  if (auto v = param(params, "q")) f.words = split_words(*v);
  if (auto v = param(params, "limit")) {
    int64_t n = parse_id(*v, "limit");
    check(n <= kMaxPageSize, "limit: at most " + std::to_string(kMaxPageSize));
    q.limit = int(n);
  }
  if (auto v = param(params, "cursor"); v && !v->empty()) q.after = decode_cursor(*v);
  return q;
}

// "d.ID.TAKEN_AT" or "u.ID": readable, and only ever parsed back here.
std::string encode_cursor(const Cursor& c) {
  return c.dated ? "d." + std::to_string(c.id) + "." + c.taken_at : "u." + std::to_string(c.id);
}

Cursor decode_cursor(const std::string& text) {
  const std::string bad = "cursor: not one this server gave";
  check(text.size() > 2 && (text[0] == 'd' || text[0] == 'u') && text[1] == '.', bad);
  Cursor c;
  c.dated = text[0] == 'd';
  size_t dot = c.dated ? text.find('.', 2) : text.size();
  check(dot != std::string::npos, bad);
  try {
    c.id = parse_id(text.substr(2, dot - 2), "cursor");
  } catch (const Error&) {
    throw Error(bad);
  }
  if (c.dated) {
    c.taken_at = text.substr(dot + 1);
    // The shape photo_metadata writes: YYYY-MM-DDTHH:MM:SS.
    check(c.taken_at.size() == 19 && digits(c.taken_at, 0, 4) && c.taken_at[10] == 'T', bad);
  }
  return c;
}

std::string like_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace tandem::gallery
