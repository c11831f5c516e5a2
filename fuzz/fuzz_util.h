#pragma once
// What the fuzz targets share: scratch files for the parsers that read
// paths, the decoding limits, and the one exception a bad input may raise.
//
// Every target accepts any bytes. tandem::Error is how tandem rejects bad
// input, so a target swallows it; anything else escaping (another
// exception, a crash, a sanitizer report, a hang) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "core/error.h"

namespace tandem::fuzz {

// A folder of this process's own (parallel fuzzing jobs run side by side),
// under TMPDIR, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                              ("tandem-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  struct Remover {
    ~Remover() {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    }
  };
  static Remover remover;
  return dir;
}

// Writes `bytes` to scratch_dir()/name, replacing it; returns the path.
inline std::string write_scratch(const std::string& name, std::span<const uint8_t> bytes) {
  std::filesystem::path p = scratch_dir() / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return p.string();
}

// Decoding limits that keep one input's work small (a header may claim
// 65535 x 65535 pixels over a few bytes of data): what tandem's own limit
// does at 100 MP, reached sooner.
inline constexpr int64_t kMaxPixels = int64_t(4) << 20;

inline std::span<const uint8_t> as_span(const uint8_t* data, size_t size) { return {data, size}; }

// Runs `body`, swallowing tandem::Error (a rejected input). Templated so a
// target's lambda inlines and its frames stay in the stack trace.
template <typename F>
void rejecting_bad_input(F&& body) {
  try {
    body();
  } catch (const tandem::Error&) {
  }
}

}  // namespace tandem::fuzz
