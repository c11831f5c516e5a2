#include "core/cache_dir.h"

#include <cstdlib>

namespace tandem {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string cache_dir() {
  if (std::string d = env("TANDEM_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty() && d.front() == '/') return d + "/tandem";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/tandem";
  return "";
}

}  // namespace tandem
