#pragma once
#include <string>
#include <string_view>

namespace tandem {

enum class DeviceKind : uint8_t { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {DeviceKind::cuda, i}; }
  // Parses "cpu", "cuda", "cuda:1"; throws Error otherwise.
  static Device parse(std::string_view s);

  std::string str() const;
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool operator==(const Device&) const = default;
};

}  // namespace tandem
