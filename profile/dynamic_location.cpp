#include "profile/dynamic_location.h"

#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace tandem::profile {

const SourceLocation* dynamic_location(std::string_view name, std::string_view category) {
  static std::mutex mutex;
  // deque: element addresses stay valid as it grows.
  static std::deque<std::string> strings;
  static std::deque<SourceLocation> records;
  static std::map<std::pair<std::string, std::string>, const SourceLocation*> index;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(std::string(name), std::string(category));
  if (auto it = index.find(key); it != index.end()) return it->second;
  const char* n = strings.emplace_back(name).c_str();
  const char* c = strings.emplace_back(category).c_str();
  records.push_back(SourceLocation{n, "", 0, c});
  return index[key] = &records.back();
}

}  // namespace tandem::profile
