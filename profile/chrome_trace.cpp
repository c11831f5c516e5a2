// Chrome Trace Event Format writer. Events are formatted by hand
// (std::to_chars) and streamed in 1 MiB blocks rather than built as a JSON
// tree: a trace of millions of zones needs no memory beyond the Trace.
// nlohmann::json only escapes strings, once per location, counter and thread.
#include "profile/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace tandem::profile {
namespace {

// Text buffered in blocks on its way to a stream.
class Sink {
 public:
  explicit Sink(std::ostream& os) : os_(os) { buf_.reserve(kBlock + 4096); }
  ~Sink() { flush(); }
  Sink& operator+=(const std::string& s) { return append(s.data(), s.size()); }
  Sink& operator+=(const char* s) { return append(s, std::strlen(s)); }
  // ns as µs with exactly three decimals: 1234567 -> "1234.567".
  void micros(uint64_t ns) {
    char text[32];
    char* end = std::to_chars(text, text + 20, ns / 1000).ptr;
    const unsigned frac = unsigned(ns % 1000);
    *end++ = '.';
    *end++ = char('0' + frac / 100);
    *end++ = char('0' + frac / 10 % 10);
    *end++ = char('0' + frac % 10);
    append(text, size_t(end - text));
  }
  // Shortest text that reads back as the same double; finite values only.
  void number(double v) {
    char text[32];
    append(text, size_t(std::to_chars(text, text + sizeof text, v).ptr - text));
  }
  void flush() {
    os_.write(buf_.data(), std::streamsize(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr size_t kBlock = size_t(1) << 20;
  Sink& append(const char* s, size_t n) {
    buf_.append(s, n);
    if (buf_.size() >= kBlock) flush();
    return *this;
  }
  std::ostream& os_;
  std::string buf_;
};

// A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

uint64_t since(uint64_t ns, uint64_t begin) { return ns > begin ? ns - begin : 0; }

void append_metadata(Sink& out, const Trace& trace) {
  out += R"({"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"tandem"}})";
  for (const Track& t : trace.tracks) {
    if (t.name.empty()) continue;
    out += R"(,{"ph":"M","name":"thread_name","pid":)" + std::to_string(t.pid);
    out += R"(,"tid":)" + std::to_string(t.tid) + ",";
    out += R"("args":{"name":)" + quoted(t.name) + "}}";
  }
}

// The constant part of each location's X events: name and category.
std::vector<std::string> zone_heads(const Trace& trace) {
  std::vector<std::string> heads;
  heads.reserve(trace.locations.size());
  for (const Location& loc : trace.locations) {
    std::string h = R"(,{"ph":"X","name":)" + quoted(loc.name);
    if (!loc.category.empty()) h += R"(,"cat":)" + quoted(loc.category);
    heads.push_back(std::move(h));
  }
  return heads;
}

// `,"pid":1,"tid":7,"ts":` for every event of a track.
std::string track_ids(const Track& track) {
  return R"(,"pid":)" + std::to_string(track.pid) + R"(,"tid":)" + std::to_string(track.tid) +
         R"(,"ts":)";
}

void append_zones(Sink& out, const Trace& trace, const Track& track,
                  const std::vector<std::string>& heads) {
  const std::string ids = track_ids(track);
  for (const ZoneRecord& z : track.zones) {
    const uint64_t begin = since(z.begin_ns, trace.begin_ns);
    const uint64_t end = std::max(begin, since(z.end_ns, trace.begin_ns));
    out += heads[z.location];
    out += ids;
    out.micros(begin);
    out += R"(,"dur":)";
    out.micros(end - begin);
    out += "}";
  }
}

// Non-finite samples are skipped: JSON has no NaN or Infinity.
void append_counters(Sink& out, const Trace& trace, const Track& track,
                     const std::vector<std::string>& names) {
  const std::string ids = track_ids(track);
  for (const CounterRecord& c : track.counters) {
    if (!std::isfinite(c.value)) continue;
    out += R"(,{"ph":"C","name":)";
    out += names[c.counter];
    out += ids;
    out.micros(since(c.ts_ns, trace.begin_ns));
    out += R"(,"args":{"value":)";
    out.number(c.value);
    out += "}}";
  }
}

void append_other_data(Sink& out, const Trace& trace) {
  uint64_t dropped_zones = 0, dropped_counters = 0;
  for (const Track& t : trace.tracks) {
    dropped_zones += t.dropped_zones;
    dropped_counters += t.dropped_counters;
  }
  out += R"("otherData":{"dropped_zones":)" + std::to_string(dropped_zones);
  out += R"(,"dropped_counters":)" + std::to_string(dropped_counters);
  out += R"(,"duration_us":)";
  out.micros(since(trace.end_ns, trace.begin_ns));
  out += "}";
}

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& os) {
  Sink out(os);
  out += R"({"displayTimeUnit":"ns",)";
  append_other_data(out, trace);
  out += ",\n\"traceEvents\":[\n";
  append_metadata(out, trace);
  const std::vector<std::string> heads = zone_heads(trace);
  std::vector<std::string> counter_names;
  for (const std::string& n : trace.counter_names) counter_names.push_back(quoted(n));
  for (const Track& track : trace.tracks) {
    append_zones(out, trace, track, heads);
    append_counters(out, trace, track, counter_names);
  }
  out += "\n]}\n";
}

std::string chrome_trace_json(const Trace& trace) {
  std::ostringstream os;
  write_chrome_trace(trace, os);
  return std::move(os).str();
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  ErrorContext where;
  where.file = path;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  check(bool(file), "cannot open trace file for writing", where);
  write_chrome_trace(trace, file);
  file.close();
  check(!file.fail(), "cannot write trace file", where);
}

}  // namespace tandem::profile
