#include "cli/train_progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace tandem::cli {

namespace {

std::string minutes(double s) {
  int64_t t = int64_t(s + 0.5);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

}  // namespace

TrainProgress::TrainProgress(int64_t epochs, std::string precision)
    : epochs_(epochs), tag_(precision == "fp32" ? "" : " [" + precision + "]"), tty_(isatty(fileno(stderr)) != 0) {}

void TrainProgress::step(const train::StepReport& r) {
  auto now = std::chrono::steady_clock::now();
  if (r.batch == 1) last_ = now;
  bool due = now - last_ >= (tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000));
  // A terminal sees the bar at once and full at the end; a log a line per period.
  if (!due && !(tty_ && (r.batch == 1 || r.batch == r.batches))) return;
  last_ = now;
  draw(r);
}

void TrainProgress::draw(const train::StepReport& r) {
  double eta = r.epoch_seconds / double(r.batch) * double(r.batches - r.batch);
  std::string text = fmt::format("epoch {}/{}{} {}/{} loss {:.4f} acc {:.2f}% {:.0f} img/s lr {:.3g} ETA {}",
                                 r.epoch + 1, epochs_, tag_, r.batch, r.batches, r.epoch_loss, 100 * r.epoch_accuracy,
                                 r.images_per_second, r.lr, minutes(eta));
  if (r.skipped_steps) text += fmt::format(" skipped {}", r.skipped_steps);
  if (!tty_) {
    fmt::print(stderr, "train: {}\n", text);
    return;
  }
  constexpr int kWidth = 24;
  int filled = r.batches > 0 ? int(kWidth * r.batch / r.batches) : 0;
  std::string bar(size_t(filled), '#');
  bar.resize(kWidth, '.');
  fmt::print(stderr, "\r[{}] {}\033[K", bar, text);
  std::fflush(stderr);
  drawn_ = true;
}

void TrainProgress::epoch(const train::EpochReport& r) {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
  std::string test = r.test ? fmt::format(" | test loss {:.4f} acc {:.2f}%", r.test->loss, 100 * r.test->accuracy)
                            : std::string();
  std::string skipped = r.skipped_steps ? fmt::format(", {} steps skipped (NaN/Inf)", r.skipped_steps) : "";
  fmt::print("epoch {}/{}{}: train loss {:.4f} acc {:.2f}%{} | {:.1f} s ({:.0f} img/s) + eval {:.1f} s{}\n",
             r.epoch + 1, epochs_, tag_, r.train_loss, 100 * r.train_accuracy, test, r.train_seconds,
             r.images_per_second, r.eval_seconds, skipped);
  std::fflush(stdout);
}

}  // namespace tandem::cli
