#include "core/keyed_cache.h"

#include <cstdio>

namespace tandem {

void append_key(std::string& k, float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%a", double(v));
  k += buf;
}

}  // namespace tandem
