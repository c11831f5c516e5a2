#pragma once
// Finding the photos under the paths a user names: a recursive walk that
// lists every regular file with its size, modification time and kind (from
// its first bytes, not its name), and reports what it could not look at
// instead of stopping there.
//
// Order: roots as given, each folder's entries sorted by name (byte order),
// depth first; the same tree always gives the same list.
// Symbolic links are followed, to files and to folders. A real file (or
// folder) reached a second time, through a link, a hard link or a root named
// twice, is listed once, under the first path that reached it; the later
// paths go to `duplicates`, so a caller tags each photo once and can count
// the rest as skipped. A link back to a folder that is being walked (an
// ancestor: found by device and inode, not by name) is a symlink loop and a
// problem.
// Nothing is skipped by name: hidden files and folders are walked too.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::pipeline {

// What the first bytes say (image::sniff_format); `empty` for 0 bytes,
// `other` for anything not an image tandem decodes.
enum class FileKind { jpeg, png, webp, heif, other, empty };

// "jpeg", "png", "webp", "heif", "other", "empty".
const char* kind_name(FileKind kind);

// Whether the name ends in an extension of a format tandem reads (.jpg,
// .jpeg, .jpe, .jfif, .png, .webp, .heic, .heif, .hif, .avif; any case). A
// file so named whose content is not an image is a bad photo, to be reported
// by path and reason, where a README.txt beside it is merely not a photo.
bool has_photo_extension(std::string_view path);

struct WalkedFile {
  std::string path;      // the root joined with the names below it, links not resolved
  int64_t size = 0;      // bytes
  int64_t mtime_ns = 0;  // modification time, nanoseconds since the Unix epoch
  FileKind kind = FileKind::other;

  bool is_image() const { return kind != FileKind::other && kind != FileKind::empty; }
};

// A path that leads to a file or folder already listed under `same_as`.
struct WalkDuplicate {
  std::string path;
  std::string same_as;
};

// A path that could not be walked or read, and why: "not found",
// "permission denied", "symlink loop: ...", "broken symbolic link ...",
// "not a regular file (...)", ...
struct WalkProblem {
  std::string path;
  std::string reason;
  // True when something that exists could not be read (permission denied,
  // an I/O error, a root not found): photos may be missing from the run.
  // False for what is no photo anyway (a broken link, a loop, a socket).
  bool unreadable = true;
};

struct WalkResult {
  std::vector<WalkedFile> files;
  std::vector<WalkDuplicate> duplicates;
  std::vector<WalkProblem> problems;
};

// Walks files and folders. Never throws for a bad entry or root: each one
// becomes a problem and the walk goes on. Reads at most the first 16 bytes
// (image::kSniffBytes) of each file.
WalkResult walk(const std::vector<std::string>& roots);

}  // namespace tandem::pipeline
