#include "core/device.h"

#include <charconv>

#include "core/error.h"
#include "core/layout.h"

namespace tandem {

Device Device::parse(std::string_view s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.substr(0, 5) == "cuda:") {
    int idx = -1;
    auto rest = s.substr(5);
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), idx);
    if (ec == std::errc() && p == rest.data() + rest.size() && idx >= 0) return cuda(idx);
  }
  throw Error("unknown device '" + std::string(s) + "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const {
  return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index);
}

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::plain: return "plain";
    case Layout::nhwc: return "nhwc";
    case Layout::blocked8: return "nChw8c";
    case Layout::blocked16: return "nChw16c";
  }
  return "?";
}

int64_t layout_block(Layout l) {
  return l == Layout::blocked8 ? 8 : l == Layout::blocked16 ? 16 : 1;
}

}  // namespace tandem
