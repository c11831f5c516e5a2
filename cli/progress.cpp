#include "cli/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tandem::cli {

ProgressPrinter::ProgressPrinter(std::vector<const pipeline::TagProgress*> parts)
    : parts_(std::move(parts)), tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()), thread_([this] { loop(); }) {}

void ProgressPrinter::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  print(true);
}

void ProgressPrinter::loop() {
  auto period = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [&] { return stopping_; })) print(false);
}

void ProgressPrinter::print(bool final) {
  int64_t total = 0, done = 0, failed = 0;
  for (const pipeline::TagProgress* p : parts_) total += p->total, done += p->done, failed += p->failed;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = s > 0 ? double(done) / s : 0;
  std::string eta = "--:--";
  if (rate > 0 && total >= done) {
    int64_t left = int64_t(double(total - done) / rate);
    eta = fmt::format("{}:{:02}", left / 60, left % 60);
  }
  std::string counts = fmt::format("{}/{} images, {} failed, {:.1f} img/s, ETA {}", done, total, failed, rate, eta);
  if (!tty_) {
    if (!final) fmt::print(stderr, "tag: {}\n", counts);
    return;
  }
  constexpr int kWidth = 30;
  int filled = total > 0 ? int(kWidth * std::min<double>(1.0, double(done) / double(total))) : 0;
  std::string bar(size_t(filled), '#');
  bar.resize(kWidth, '.');
  fmt::print(stderr, "\r[{}] {}\033[K{}", bar, counts, final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace tandem::cli
