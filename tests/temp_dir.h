#pragma once
// A fresh directory under the system temp folder, removed with its contents
// when the test ends; and a runner for /usr/bin/python3 (Debian's, which has
// numpy and onnx; the `python3` on PATH may be a pyenv without them).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tandem::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tandem_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return file(name);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

constexpr const char* kSystemPython = "/usr/bin/python3";

inline bool have_system_python() { return std::filesystem::exists(kSystemPython); }

// Runs `script` (written to `dir`) with arguments; returns the exit status.
inline int run_python(const TempDir& dir, const std::string& script, const std::string& args) {
  std::string path = dir.write("script.py", script);
  std::string cmd = std::string(kSystemPython) + " " + path + " " + args;
  int rc = std::system(cmd.c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

}  // namespace tandem::testing
