#pragma once
// Files passed between the CPU decoders and the GPU's JPEG engines with
// their bytes already read, so that no file is read twice.
//
// The engines take baseline JPEGs only; the CPU decoders take everything.
// Left to take files in turn from one list, the CPU decoders get baseline
// files the engines would have decoded at no CPU cost, and in `tandem tag`
// the CPU is the limit on a GPU host (16 cores against the engines and the
// network). So a CPU decoder that reads a baseline file passes it to the
// engines' backlog while that has room, and decodes the file itself only
// when the engines are behind; the engines take their backlog before new
// files. The backlog is small (a fraction of a second of the engines'
// work): files in it are read into memory, and the run's tail must not
// wait on it.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "pipeline/catalog.h"

namespace tandem::pipeline {

// A file read, and its record started, on its way to another decoder.
struct ReadFile {
  FileRecord record;
  std::vector<uint8_t> bytes;
};

class GpuBacklog {
 public:
  // At most `files` files and `bytes` bytes of them wait at once.
  GpuBacklog(size_t files, size_t bytes) : max_files_(files), max_bytes_(bytes) {}

  // A GPU decoder opened and takes from the backlog from now on.
  void join() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++takers_;
  }
  // A GPU decoder stops taking. When it was the last, the files still
  // waiting come back (for the CPU decoders) and later offers are refused.
  std::vector<ReadFile> leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<ReadFile> left;
    if (--takers_ > 0) return left;
    for (ReadFile& f : files_) left.push_back(std::move(f));
    files_.clear();
    bytes_ = 0;
    return left;
  }

  // Takes `f` (moved from) when a GPU decoder is taking and there is room;
  // otherwise leaves it untouched and returns false.
  bool offer(ReadFile& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (takers_ <= 0 || files_.size() >= max_files_ || bytes_ + f.bytes.size() > max_bytes_)
      return false;
    bytes_ += f.bytes.size();
    files_.push_back(std::move(f));
    return true;
  }

  // The oldest waiting file, if any; never waits.
  std::optional<ReadFile> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (files_.empty()) return std::nullopt;
    ReadFile f = std::move(files_.front());
    files_.pop_front();
    bytes_ -= f.bytes.size();
    return f;
  }

  // File buffers with their capacity kept, back from the GPU decoders for
  // the CPU decoders' next reads: a 12-MP file is 3 MB, and a fresh buffer
  // for each would cost its page faults and zeroing again.
  void recycle(std::vector<uint8_t> buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spares_.size() < max_files_) spares_.push_back(std::move(buffer));
  }
  std::vector<uint8_t> spare() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spares_.empty()) return {};
    std::vector<uint8_t> b = std::move(spares_.back());
    spares_.pop_back();
    return b;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return files_.size();
  }

 private:
  const size_t max_files_, max_bytes_;
  mutable std::mutex mutex_;
  std::deque<ReadFile> files_;
  size_t bytes_ = 0;
  std::vector<std::vector<uint8_t>> spares_;
  int takers_ = 0;
};

}  // namespace tandem::pipeline
