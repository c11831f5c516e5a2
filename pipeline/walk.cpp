#include "pipeline/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <span>
#include <utility>

#include "image/decode.h"

namespace tandem::pipeline {

namespace {

using FileId = std::pair<dev_t, ino_t>;

FileId id_of(const struct stat& st) { return {st.st_dev, st.st_ino}; }

std::string reason_for(int err) {
  switch (err) {
    case ENOENT: return "not found";
    case EACCES:
    case EPERM: return "permission denied";
    case ELOOP: return "symlink loop (too many levels of symbolic links)";
    default: return std::strerror(err);
  }
}

std::string file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "an unknown file type";
}

std::string join(const std::string& dir, const char* name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

FileKind kind_of(std::span<const uint8_t> head) {
  if (head.empty()) return FileKind::empty;
  switch (image::sniff_format(head)) {
    case image::ImageFormat::jpeg: return FileKind::jpeg;
    case image::ImageFormat::png: return FileKind::png;
    case image::ImageFormat::webp: return FileKind::webp;
    case image::ImageFormat::heif: return FileKind::heif;
    case image::ImageFormat::unknown: break;
  }
  return FileKind::other;
}

// Reads up to out.size() bytes; the count, or -1 with errno set.
ssize_t read_head(int fd, std::span<uint8_t> out) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += size_t(n);
  }
  return ssize_t(got);
}

// The sorted names in a folder, or an errno.
int list_folder(const std::string& path, std::vector<std::string>& names) {
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return errno;
  int err = 0;
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(dir);
    if (!e) {
      err = errno;
      break;
    }
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return err;
}

class Walker {
 public:
  WalkResult result;

  void visit(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return problem(path, reason_for(errno));
    if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT) return problem(path, "broken symbolic link (its target does not exist)", false);
      return problem(path, reason_for(err));
    }
    if (S_ISDIR(st.st_mode)) return visit_folder(path, st);
    if (S_ISREG(st.st_mode)) return add_file(path, st);
    problem(path, "not a regular file (" + file_type_name(st.st_mode) + ")", false);
  }

 private:
  std::map<FileId, std::string> seen_;  // files and folders listed, by their first path
  std::vector<std::pair<FileId, std::string>> ancestors_;  // the folders being walked

  void problem(const std::string& path, std::string reason, bool unreadable = true) {
    result.problems.push_back({path, std::move(reason), unreadable});
  }

  // True (and recorded as a duplicate) when `id` was listed before.
  bool seen_before(const std::string& path, FileId id) {
    const auto [it, inserted] = seen_.emplace(id, path);
    if (!inserted) result.duplicates.push_back({path, it->second});
    return !inserted;
  }

  void visit_folder(const std::string& path, const struct stat& st) {
    const FileId id = id_of(st);
    for (const auto& [ancestor, ancestor_path] : ancestors_) {
      if (ancestor == id) return problem(path, "symlink loop: leads back to " + ancestor_path, false);
    }
    if (seen_before(path, id)) return;
    std::vector<std::string> names;
    if (const int err = list_folder(path, names)) {
      problem(path, names.empty() ? reason_for(err) : "cannot list the whole folder: " + reason_for(err));
      if (names.empty()) return;
    }
    ancestors_.emplace_back(id, path);
    for (const std::string& name : names) visit(join(path, name.c_str()));
    ancestors_.pop_back();
  }

  void add_file(const std::string& path, const struct stat& st) {
    if (seen_before(path, id_of(st))) return;
    // O_NONBLOCK: should the file have become a pipe since the stat, open
    // must not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return problem(path, reason_for(errno));
    uint8_t head[image::kSniffBytes];
    struct stat now {};
    const bool stat_ok = ::fstat(fd, &now) == 0;
    const ssize_t n = stat_ok ? read_head(fd, head) : -1;
    const int err = errno;
    ::close(fd);
    if (n < 0) return problem(path, "read error: " + reason_for(err));
    const int64_t mtime_ns = int64_t(now.st_mtim.tv_sec) * 1'000'000'000 + now.st_mtim.tv_nsec;
    result.files.push_back({path, int64_t(now.st_size), mtime_ns,
                            kind_of(std::span<const uint8_t>(head, size_t(n)))});
  }
};

}  // namespace

const char* kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::jpeg: return "jpeg";
    case FileKind::png: return "png";
    case FileKind::webp: return "webp";
    case FileKind::heif: return "heif";
    case FileKind::other: return "other";
    case FileKind::empty: return "empty";
  }
  return "other";
}

bool has_photo_extension(std::string_view path) {
  static constexpr std::string_view kExtensions[] = {"jpg", "jpeg", "jpe", "jfif", "png",
                                                     "webp", "heic", "heif", "hif", "avif"};
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) return false;
  std::string ext(path.substr(dot + 1));
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return std::find(std::begin(kExtensions), std::end(kExtensions), ext) != std::end(kExtensions);
}

WalkResult walk(const std::vector<std::string>& roots) {
  Walker walker;
  for (const std::string& root : roots) {
    if (root.empty()) {
      walker.result.problems.push_back({root, "not found (empty path)"});
      continue;
    }
    walker.visit(root);
  }
  return std::move(walker.result);
}

}  // namespace tandem::pipeline
