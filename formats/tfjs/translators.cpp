#include "formats/tfjs/translators.h"

#include <map>
#include <mutex>

namespace tandem::tfjs {

namespace {
std::map<std::string, Translator>& table() {
  static std::map<std::string, Translator> t;
  return t;
}
}  // namespace

void register_translator(const std::string& op, Translator t) { table()[op] = t; }

Translator find_translator(const std::string& op) {
  static std::once_flag once;
  std::call_once(once, [] {
    register_nn_translators();
    register_math_translators();
    register_array_translators();
  });
  auto it = table().find(op);
  return it == table().end() ? nullptr : it->second;
}

}  // namespace tandem::tfjs
