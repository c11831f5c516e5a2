#pragma once
// Image work spread over the cores: worker w of `workers` takes items
// w, w + workers, ... so that each keeps its own decoder state and scratch.
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace tandem::cli {

// Runs body(worker, workers) on min(items, cores) threads and joins them.
// `body` must not throw (workers record per-item errors themselves).
template <typename Body>
void run_workers(size_t items, Body body) {
  size_t workers = std::min<size_t>(items, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) pool.emplace_back([&body, w, workers] { body(w, workers); });
  for (auto& t : pool) t.join();
}

}  // namespace tandem::cli
