#pragma once
// The gallery's page (gallery/web/), compiled into the binary by
// cmake/EmbedFiles.cmake: what `tandem serve` answers at / and
// `tandem gallery` writes out.
#include <cstddef>
#include <span>
#include <string_view>

namespace tandem::gallery {

struct WebAsset {
  const char* name;          // "index.html", "app.js", ...
  const char* content_type;  // what the server sends with it
  const unsigned char* data;
  size_t size;
};

std::span<const WebAsset> web_assets();

// The asset called `name`, or null.
inline const WebAsset* find_web_asset(std::string_view name) {
  for (const WebAsset& a : web_assets())
    if (name == a.name) return &a;
  return nullptr;
}

}  // namespace tandem::gallery
