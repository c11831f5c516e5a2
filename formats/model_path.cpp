#include "formats/model_path.h"

#include <filesystem>

#include "core/error.h"

namespace tandem {

std::string resolve_model_relative(const std::string& base_dir, const std::string& location) {
  check(!location.empty() && location.find('\0') == std::string::npos,
        "empty or invalid file location");
  std::filesystem::path rel(location);
  check(!rel.is_absolute() && !rel.has_root_name() && !rel.has_root_directory(),
        "location '" + location + "' is not relative to the model");
  for (const auto& part : rel)
    check(part != "..", "location '" + location + "' leaves the model folder");
  return (std::filesystem::path(base_dir) / rel).string();
}

}  // namespace tandem
