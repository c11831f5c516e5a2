#pragma once
// The files of one tag run, handed to the decoder threads one at a time:
// a fixed list, or files that keep arriving while the run goes on (a
// queue worker's claims). The second kind asks for more while some are
// still left, on the thread that takes the file below the mark, so the
// decoders never wait for the database and the pipeline never drains
// between claims; the run ends when a request brings nothing.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tandem::pipeline {

struct InputFile {
  std::string path;
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

class FileFeed {
 public:
  // `files`, which must outlive the feed.
  explicit FileFeed(const std::vector<InputFile>& files);
  // Files from `more` (none: the feed ends), first asked at the first
  // take(), then whenever fewer than `low` are left untaken. An exception
  // from it ends the feed: the files already there are still taken, then
  // take() rethrows it.
  FileFeed(std::function<std::vector<InputFile>()> more, size_t low);

  // The next file, or none when the run has no more. Thread-safe.
  std::optional<InputFile> take();
  // Whether files keep arriving (the second constructor).
  bool growing() const { return fixed_ == nullptr; }
  // Whether take() may still return a file.
  bool may_have_more() const;
  // Files received and not yet taken (for sharing out the last ones).
  size_t left() const;
  // Files received so far.
  int64_t received() const;
  // Called with the number of files each arrival brings (progress totals),
  // on the thread that asked.
  std::function<void(size_t)> on_arrival;

 private:
  void refill(std::unique_lock<std::mutex>& lock);

  const std::vector<InputFile>* fixed_ = nullptr;
  std::atomic<size_t> next_{0};  // into fixed_

  std::function<std::vector<InputFile>()> more_;
  size_t low_ = 0;
  mutable std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<InputFile> pending_;
  int64_t received_ = 0;
  bool asking_ = false, ended_ = false;
  std::exception_ptr failed_;
};

}  // namespace tandem::pipeline
