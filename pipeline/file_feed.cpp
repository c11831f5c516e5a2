#include "pipeline/file_feed.h"

#include <exception>

namespace tandem::pipeline {

FileFeed::FileFeed(const std::vector<InputFile>& files) : fixed_(&files) {}

FileFeed::FileFeed(std::function<std::vector<InputFile>()> more, size_t low) : more_(std::move(more)), low_(low) {}

std::optional<InputFile> FileFeed::take() {
  if (fixed_) {
    const size_t i = next_++;
    if (i >= fixed_->size()) return std::nullopt;
    return (*fixed_)[i];
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!pending_.empty()) {
      InputFile f = std::move(pending_.front());
      pending_.pop_front();
      // Below the mark: this thread asks for more before it decodes its file.
      if (pending_.size() < low_ && !asking_ && !ended_) refill(lock);
      return f;
    }
    if (failed_) std::rethrow_exception(failed_);
    if (ended_) return std::nullopt;
    if (!asking_) {
      refill(lock);
      continue;
    }
    arrived_.wait(lock);
  }
}

void FileFeed::refill(std::unique_lock<std::mutex>& lock) {
  asking_ = true;
  lock.unlock();
  std::vector<InputFile> got;
  std::exception_ptr error;
  try {
    got = more_();
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  asking_ = false;
  // A failed request ends the feed; the error reaches whoever next finds
  // it empty (the taker that asked still decodes the file it holds).
  if (error) failed_ = error;
  if (got.empty()) ended_ = true;
  received_ += int64_t(got.size());
  for (InputFile& f : got) pending_.push_back(std::move(f));
  arrived_.notify_all();
  if (on_arrival && !got.empty()) {
    const size_t n = got.size();
    lock.unlock();
    on_arrival(n);
    lock.lock();
  }
}

bool FileFeed::may_have_more() const {
  if (fixed_) return next_.load() < fixed_->size();
  std::lock_guard<std::mutex> lock(mu_);
  return !pending_.empty() || !ended_;
}

size_t FileFeed::left() const {
  if (fixed_) return fixed_->size() - std::min(next_.load(), fixed_->size());
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

int64_t FileFeed::received() const {
  if (fixed_) return int64_t(fixed_->size());
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

}  // namespace tandem::pipeline
