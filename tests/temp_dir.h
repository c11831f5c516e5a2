#pragma once
// A fresh directory under the system temp folder, removed with its contents
// when the test ends; a runner for /usr/bin/python3 (Debian's, which has
// numpy and onnx; the `python3` on PATH may be a pyenv without them); and one
// for command-line reference tools (sqlite3, exiv2) whose output is wanted.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
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

// `s` as one single-quoted shell word.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `command` through the shell; returns its stdout, and its exit status
// in `status` (-1 if it could not run).
inline std::string capture_command(const std::string& command, int* status) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  *status = rc == -1 ? -1 : WEXITSTATUS(rc);
  return out;
}

}  // namespace tandem::testing
