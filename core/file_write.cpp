#include "core/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace tandem {

namespace {

// Creates a new, unused temp file beside `path`; returns its name and fd.
std::pair<std::string, int> create_temp_beside(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path target(path);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name(".");
    name += target.filename().string();
    name += ".tandem-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".tmp";
    std::string temp = (target.parent_path() / name).string();
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return {temp, fd};
    if (errno != EEXIST) break;
  }
  throw Error(std::string("cannot create a temp file beside it: ") + std::strerror(errno),
              ErrorContext{path, "", "", ""});
}

// Writes all of `bytes` to `fd` and flushes it to the disk; false on failure.
bool write_and_sync(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return ::fsync(fd) == 0;
}

// Replaces `path` through a temp file beside it that `fill` writes and
// syncs (given the temp file's fd and name; false on failure, errno set).
template <typename Fill>
void replace_through_temp(const std::string& path, Fill&& fill) {
  auto [temp, fd] = create_temp_beside(path);
  const char* failed = nullptr;
  // A replaced file keeps its permissions (a user's sidecar may be read-only
  // to others); a new one gets what open() gave the temp file.
  struct stat old {};
  try {
    if (::stat(path.c_str(), &old) == 0 && ::fchmod(fd, old.st_mode & 07777) != 0)
      failed = "set the permissions of";
    else if (!fill(fd, temp))
      failed = "write";
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  int err = errno;
  if (::close(fd) != 0 && !failed) {
    failed = "write";
    err = errno;
  }
  if (!failed && ::rename(temp.c_str(), path.c_str()) != 0) {
    failed = "rename a temp file to";
    err = errno;
  }
  if (failed) {
    ::unlink(temp.c_str());
    throw Error(std::string("cannot ") + failed + " file: " + std::strerror(err),
                ErrorContext{path, "", "", ""});
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  replace_through_temp(path, [&](int fd, const std::string&) { return write_and_sync(fd, bytes); });
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  replace_through_temp(path, [&](int fd, const std::string& temp) {
    std::ofstream os(temp, std::ios::binary | std::ios::trunc);
    if (!os) return false;
    write(os);
    os.close();
    // The stream wrote through its own descriptor; fsync of ours syncs the
    // same file.
    return !os.fail() && ::fsync(fd) == 0;
  });
}

}  // namespace tandem
