#pragma once
// Thumbnails as the freedesktop Thumbnail Managing Standard keeps them, so
// that file managers and photo viewers reuse what `tandem tag` made and the
// gallery shows theirs: $XDG_CACHE_HOME/thumbnails/{normal,large}/
// MD5(URI).png (128 and 256 pixels on the longer side), each PNG carrying
// Thumb::URI and Thumb::MTime (the photo's modification time), so a
// thumbnail of a file that changed is known stale. Made from the pixels a
// decoder already holds: no photo is decoded for its thumbnail. Where the
// shared cache cannot be written, a folder of the caller's (beside the
// catalog) takes them, in the same layout.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "image/image.h"

namespace tandem::pipeline {

// The file: URI GLib gives an absolute path (g_filename_to_uri: bytes
// outside its unreserved set percent-encoded, upper-case hex), which the
// standard hashes to name the thumbnail.
std::string file_uri(const std::string& absolute_path);

// The lower-case hex MD5 of `text`.
std::string md5_hex(const std::string& text);

// $XDG_CACHE_HOME/thumbnails, or ~/.cache/thumbnails when it is unset or
// relative (the XDG base directory rule).
std::string default_thumbnail_root();

// The longer side of a "large" thumbnail, in pixels (the standard's; a
// "normal" one is half): what a decoder fits a photo into for them.
constexpr int kLargeThumbnailSide = 256;

// The folder that takes a catalog's thumbnails when the shared cache cannot
// be written: beside a SQLite file; for a PostgreSQL catalog, which has no
// folder, one of the user's cache named by the URL's MD5.
std::string catalog_thumbnail_folder(const std::string& catalog);

class ThumbnailStore {
 public:
  // `root`: the cache's thumbnails folder; `fallback`: where thumbnails go
  // when root cannot be written.
  ThumbnailStore(std::string root, std::string fallback);

  // Writes the normal and large thumbnails of the photo at `path` (made
  // absolute), modified at `mtime_ns`, `size` bytes, from its upright
  // pixels `pixels` (any size; never enlarged). Thread-safe. Throws Error
  // naming the photo when neither folder can be written.
  void write(const std::string& path, int64_t mtime_ns, int64_t size, const image::Image& pixels);

  // The PNG of a current thumbnail of the photo at `path` (made absolute)
  // modified at `mtime_ns`: "large" or "normal", from the cache or else the
  // fallback folder; none when neither holds one whose Thumb::URI and
  // Thumb::MTime match (a stale one is a file that changed since).
  std::optional<std::vector<uint8_t>> current(const std::string& path, int64_t mtime_ns, bool large) const;

  // Whether both thumbnails of the photo at `path` (made absolute) exist in
  // the cache or the fallback folder, written no earlier than `mtime_ns`:
  // one stat each, for a re-run to find the photos whose thumbnails went
  // missing (a full disk, a cleaned cache) without reading any.
  bool has(const std::string& path, int64_t mtime_ns) const;

  int64_t written() const { return written_; }
  // Whether thumbnails go to the fallback folder (the cache was not writable).
  bool using_fallback() const { return fallback_in_use_; }

 private:
  struct Thumb;
  // Writes every flavor under `base`, making its folders the first time
  // (`ready`); throws Error when they cannot be made or written.
  void write_all(const std::string& base, std::atomic<bool>& ready, const std::vector<Thumb>& thumbs,
                 const std::string& uri, const std::string& name, int64_t mtime_ns, int64_t size, int full_w,
                 int full_h);

  const std::string root_, fallback_;
  std::atomic<bool> root_ready_{false}, fallback_ready_{false};  // their folders exist
  std::atomic<bool> fallback_in_use_{false};
  std::atomic<int64_t> written_{0};
};

}  // namespace tandem::pipeline
