#include "cuda/algo_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/cache_dir.h"

namespace tandem::cuda {

namespace {

using nlohmann::json;

// Bumped when what a choice means changes (selection policy, fields): older
// files are then simply not read.
// 2: training's directions picked by the rule inference used (fastest, then
// the smallest workspace within 3%), where they had taken the fastest.
constexpr int kFormat = 2;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// File names keep letters, digits, '.', '-' and '_'; anything else becomes '_'.
std::string file_safe(const std::string& s) {
  std::string r = s;
  for (char& ch : r)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_') ch = '_';
  return r;
}

json to_json(const ConvChoice& c) {
  return {{"algo", c.algo}, {"math_type", c.math_type}, {"workspace_bytes", c.workspace_bytes}, {"fused", c.fused}};
}

bool small_int(const json& j) {
  return j.is_number_integer() && j.get<int64_t>() >= 0 && j.get<int64_t>() <= std::numeric_limits<int>::max();
}

std::optional<ConvChoice> from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto algo = j.find("algo"), math = j.find("math_type"), ws = j.find("workspace_bytes"), fused = j.find("fused");
  if (algo == j.end() || math == j.end() || ws == j.end() || fused == j.end()) return std::nullopt;
  if (!small_int(*algo) || !small_int(*math) || !ws->is_number_unsigned() || !fused->is_boolean()) return std::nullopt;
  return ConvChoice{algo->get<int>(), math->get<int>(), ws->get<size_t>(), fused->get<bool>()};
}

// The entries of a cache file's text; `clean` is false when the text or some
// entry is malformed (the well-formed entries are still returned).
std::map<std::string, ConvChoice> parse_entries(const std::string& text, bool& clean) {
  std::map<std::string, ConvChoice> r;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  clean = doc.is_object() && doc.contains("format") && doc["format"] == kFormat && doc.contains("entries") &&
          doc["entries"].is_object();
  if (!clean) return r;
  for (const auto& [key, value] : doc["entries"].items()) {
    if (std::optional<ConvChoice> c = from_json(value)) r[key] = *c;
    else clean = false;
  }
  return r;
}

// The file's bytes; nullopt when it does not exist. Throws std::runtime_error
// when it exists but cannot be read. Absence is told by open's own errno: a
// second look (stat after a failed open) races with a writer's rename that
// lands in between and would report a healthy file as unreadable.
std::optional<std::string> read_text(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error(std::string("cannot open it for reading: ") + std::strerror(errno));
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("cannot read it: " + why);
    }
    if (n == 0) break;
    text.append(buf, size_t(n));
  }
  ::close(fd);
  return text;
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    done += size_t(n);
  }
}

// Writes `bytes` to a fresh file next to `path` and renames it over `path`:
// a reader sees the old file or the new one, never part of one. No fsync: a
// file cut short by a crash reads as corrupt, which only costs a search.
void replace_file(const std::string& path, const std::string& bytes) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create " + p.parent_path().string() + ": " + ec.message());
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::fchmod(fd, 0644);  // mkstemp makes it 0600; the cache holds nothing private
  try {
    write_all(fd, bytes);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  bool closed = ::close(fd) == 0;
  if (!closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot replace it: " + why);
  }
}

}  // namespace

std::string AlgoDevice::str() const {
  return gpu + " sm_" + std::to_string(cc_major) + std::to_string(cc_minor) + " cudnn " +
         std::to_string(cudnn_version);
}

std::string AlgoDevice::file_name() const {
  return "conv_algos-v" + std::to_string(kFormat) + "-" + file_safe(gpu) + "-sm" + std::to_string(cc_major) +
         std::to_string(cc_minor) + "-cudnn" + std::to_string(cudnn_version) + ".json";
}

std::string ConvProblem::key() const {
  auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); };
  return dtype + " " + layout + " n" + std::to_string(n) + " c" + std::to_string(c) + " h" +
         std::to_string(h) + " w" + std::to_string(w) + " k" + std::to_string(k) + " r" +
         std::to_string(r) + " s" + std::to_string(s) + " pad" + pair(pad_h, pad_w) + " stride" +
         pair(stride_h, stride_w) + " dilation" + pair(dilation_h, dilation_w) + " groups" +
         std::to_string(groups) + " compute" + std::to_string(compute_type) + " math" +
         std::to_string(math_type) + " fused=" + fused +
         // Forward keys keep the form files written before directions existed.
         (direction == "forward" ? "" : " " + direction);
}

AlgoCache::AlgoCache(std::string path, AlgoDevice device) : path_(std::move(path)), device_(std::move(device)) {}

std::string AlgoCache::key(const ConvProblem& p) const { return device_.str() + " | " + p.key(); }

std::optional<ConvChoice> AlgoCache::find(const ConvProblem& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  load_locked();
  auto it = entries_.find(key(p));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void AlgoCache::store(const ConvProblem& p, const ConvChoice& choice) {
  std::lock_guard<std::mutex> lock(mutex_);
  load_locked();
  entries_[key(p)] = choice;
  write_locked();
}

void AlgoCache::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  try {
    std::optional<std::string> text = read_text(path_);
    if (!text) return;
    bool clean = true;
    entries_ = parse_entries(*text, clean);
    if (!clean) warn_once("malformed, ignoring what cannot be read");
  } catch (const std::exception& e) {
    warn_once(e.what());
  }
}

// Merges what other processes wrote since the load, then replaces the file.
void AlgoCache::write_locked() {
  try {
    std::map<std::string, ConvChoice> merged;
    bool clean = true;
    if (std::optional<std::string> text = read_text(path_)) merged = parse_entries(*text, clean);
    for (const auto& [k, v] : entries_) merged[k] = v;
    json doc = {{"format", kFormat}, {"device", device_.str()}, {"entries", json::object()}};
    for (const auto& [k, v] : merged) doc["entries"][k] = to_json(v);
    replace_file(path_, doc.dump(1) + "\n");
    entries_ = std::move(merged);
  } catch (const std::exception& e) {
    warn_once(std::string("not saved: ") + e.what());
  }
}

void AlgoCache::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  std::cerr << "tandem: warning: convolution algorithm cache " << path_ << ": " << what
            << " (algorithms are measured instead)\n";
}

AlgoCache* algo_cache(const AlgoDevice& device) {
  if (env("TANDEM_ALGO_CACHE") == "0") return nullptr;
  std::string dir = cache_dir();
  if (dir.empty()) return nullptr;
  std::string path = (std::filesystem::path(dir) / device.file_name()).string();
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<AlgoCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  auto& c = caches[path];
  if (!c) c = std::make_unique<AlgoCache>(path, device);
  return c.get();
}

}  // namespace tandem::cuda
