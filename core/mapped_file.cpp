#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tandem {

MappedFile::MappedFile(const std::string& path, uint64_t max_bytes) {
  const ErrorContext ctx{path, {}, {}, {}};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(errno == ENOENT ? std::string("file not found")
                                : std::string("cannot open: ") + std::strerror(errno),
                ctx);
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const int stat_errno = errno;
  if (!stat_ok || !S_ISREG(st.st_mode) || uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    check(stat_ok, std::string("cannot stat: ") + std::strerror(stat_errno), ctx);
    check(S_ISREG(st.st_mode), "not a regular file", ctx);
    throw Error("file is " + std::to_string(st.st_size) + " bytes, more than the " +
                    std::to_string(max_bytes) + " this reader accepts",
                ctx);
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      ::close(fd);
      throw Error(std::string("cannot map: ") + std::strerror(map_errno), ctx);
    }
    // Read once, front to back: let the kernel read ahead.
    ::madvise(data_, size_, MADV_SEQUENTIAL);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace tandem
