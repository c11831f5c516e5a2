// Chrome Trace Event Format writer. Events are formatted by hand
// (std::to_chars) and streamed in 1 MiB blocks rather than built as a JSON
// tree: a trace of millions of zones needs no memory beyond the Trace.
// nlohmann::json only escapes strings, once per location, counter and thread.
#include "profile/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_write.h"

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

// GPU device d is process kGpuPid + d, each of its streams a thread.
constexpr uint32_t kGpuPid = 100;

void append_gpu_metadata(Sink& out, const GpuActivity& gpu) {
  uint32_t last_device = UINT32_MAX;
  for (const GpuStream& s : gpu.streams) {  // sorted by device, then stream
    const std::string pid = std::to_string(kGpuPid + s.device);
    if (s.device != last_device)
      out += R"(,{"ph":"M","name":"process_name","pid":)" + pid + R"(,"tid":0,"args":{"name":"GPU )" +
             std::to_string(s.device) + "\"}}";
    last_device = s.device;
    out += R"(,{"ph":"M","name":"thread_name","pid":)" + pid + R"(,"tid":)" + std::to_string(s.stream) +
           R"(,"args":{"name":"stream )" + std::to_string(s.stream) + "\"}}";
  }
}

std::string dims(const uint32_t d[3]) {
  std::string text = "\"";  // appended, not "a" + b: GCC 12 warns (-Wrestrict) on that falsely
  text += std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
  return text + "\"";
}

void append_gpu_op(Sink& out, const Trace& trace, const GpuOp& op, const std::string& name, const std::string& ids) {
  const uint64_t begin = since(op.start_ns, trace.begin_ns);
  const uint64_t dur = std::max(begin, since(op.end_ns, trace.begin_ns)) - begin;
  out += R"(,{"ph":"X","name":)" + name + R"(,"cat":")" + gpu_op_kind_name(op.kind) + "\"" + ids;
  out.micros(begin);
  out += R"(,"dur":)";
  out.micros(dur);
  out += R"(,"args":{"correlation":)" + std::to_string(op.correlation);
  if (op.kind == GpuOpKind::kernel && op.grid[0] != 0) out += R"(,"grid":)" + dims(op.grid) + R"(,"block":)" + dims(op.block);
  if (op.kind != GpuOpKind::kernel) out += R"(,"bytes":)" + std::to_string(op.bytes);
  if (op.kind == GpuOpKind::memcpy && op.end_ns > op.start_ns) {
    out += R"(,"GB/s":)";
    out.number(double(op.bytes) / double(op.end_ns - op.start_ns));
  }
  out += "}}";
}

// A flow arrow from a host call to the GPU work it launched: "s" inside the
// call, "f" with binding point "e" at the op's start (bound to the op). Ids
// are per arrow: one cudaGraphLaunch correlates with many kernels.
void append_flow(Sink& out, const Trace& trace, uint64_t id, const GpuApiCall& call, const std::string& op_ids,
                 uint64_t op_start) {
  const std::string head = R"(,{"name":"launch","cat":"launch","id":)" + std::to_string(id);
  out += head + R"(,"ph":"s","pid":1,"tid":)" + std::to_string(call.tid) + R"(,"ts":)";
  out.micros(since(call.start_ns + since(call.end_ns, call.start_ns) / 2, trace.begin_ns));
  out += "}";
  out += head + R"(,"ph":"f","bp":"e")" + op_ids;
  out.micros(since(op_start, trace.begin_ns));
  out += "}";
}

void append_gpu(Sink& out, const Trace& trace) {
  const GpuActivity& gpu = trace.gpu;
  std::vector<std::string> names;
  for (const std::string& n : gpu.names) names.push_back(quoted(n));
  // The outermost call of a correlation id (a runtime call holds its driver call).
  std::unordered_map<uint32_t, const GpuApiCall*> launch_of;
  for (const GpuApiCall& c : gpu.api_calls) {
    if (c.tid == 0 || c.name >= names.size()) continue;
    out += R"(,{"ph":"X","name":)" + names[c.name] + R"(,"cat":"cuda_api","pid":1,"tid":)" + std::to_string(c.tid) +
           R"(,"ts":)";
    out.micros(since(c.start_ns, trace.begin_ns));
    out += R"(,"dur":)";
    out.micros(c.end_ns > c.start_ns ? c.end_ns - c.start_ns : 0);
    out += R"(,"args":{"correlation":)" + std::to_string(c.correlation) + "}}";
    auto [it, added] = launch_of.try_emplace(c.correlation, &c);
    if (!added && c.start_ns < it->second->start_ns) it->second = &c;
  }
  uint64_t flow_id = 1;
  for (const GpuStream& s : gpu.streams) {
    const std::string ids = R"(,"pid":)" + std::to_string(kGpuPid + s.device) + R"(,"tid":)" +
                            std::to_string(s.stream) + R"(,"ts":)";
    for (const GpuOp& op : s.ops) {
      if (op.name >= names.size()) continue;
      append_gpu_op(out, trace, op, names[op.name], ids);
      auto it = op.correlation == 0 ? launch_of.end() : launch_of.find(op.correlation);
      if (it != launch_of.end()) append_flow(out, trace, flow_id++, *it->second, ids, op.start_ns);
    }
  }
}

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& os) {
  Sink out(os);
  out += R"({"displayTimeUnit":"ns",)";
  append_other_data(out, trace);
  out += ",\n\"traceEvents\":[\n";
  append_metadata(out, trace);
  append_gpu_metadata(out, trace.gpu);
  const std::vector<std::string> heads = zone_heads(trace);
  std::vector<std::string> counter_names;
  for (const std::string& n : trace.counter_names) counter_names.push_back(quoted(n));
  for (const Track& track : trace.tracks) {
    append_zones(out, trace, track, heads);
    append_counters(out, trace, track, counter_names);
  }
  append_gpu(out, trace);
  out += "\n]}\n";
}

std::string chrome_trace_json(const Trace& trace) {
  std::ostringstream os;
  write_chrome_trace(trace, os);
  return std::move(os).str();
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  // Whole or not at all: a full disk or a kill leaves the last trace, never
  // half a new one.
  write_file_atomically(path, [&](std::ostream& os) { write_chrome_trace(trace, os); });
}

}  // namespace tandem::profile
