// How fast the catalog hands out and takes back work (tag --queue) when the
// network and the decoders cost nothing: W worker threads, each with its own
// connections as a worker process has, claim files from the queue, store a
// typical result for each (2 tags, 3 objects, camera metadata; no faces) in
// one transaction per claim, and claim again, for a fixed time. The peer,
// measured by the caller in the same run: pgbench's TPC-B-like transactions
// on the same server (bench/queue_scale.py).
//
//   queue_throughput CATALOG --workers W --seconds S [--claim C] [--rows N]
//
// CATALOG: postgresql://... or a SQLite file. --rows N first fills the
// queue with N files (/bench/N) unless it holds that many. Prints a table
// and a JSON line: files claimed and stored per second, claim and commit
// latencies (p50, p99).
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "pipeline/catalog.h"
#include "pipeline/sql.h"
#include "pipeline/work_queue.h"

using namespace tandem;
using namespace tandem::pipeline;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kModel = "bench";

struct Args {
  std::string catalog;
  int workers = 1, claim = 128;
  double seconds = 10;
  int64_t rows = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&] {
      check(i + 1 < argc, k + " needs a value");
      return std::string(argv[++i]);
    };
    if (k == "--workers") a.workers = std::stoi(value());
    else if (k == "--seconds") a.seconds = std::stod(value());
    else if (k == "--claim") a.claim = std::stoi(value());
    else if (k == "--rows") a.rows = std::stoll(value());
    else a.catalog = k;
  }
  check(!a.catalog.empty() && a.workers > 0 && a.claim > 0 && a.seconds > 0,
        "usage: queue_throughput CATALOG --workers W --seconds S [--claim C] [--rows N]");
  return a;
}

// Fills the queue with files /bench/1 .. /bench/N in the database itself.
void fill_queue(const std::string& catalog, int64_t rows) {
  std::unique_ptr<sql::Database> db = sql::open_database(catalog);
  const int64_t have = db->query_int("SELECT count(*) FROM work WHERE model_id = 'bench'", "count queued files");
  if (have >= rows) return;
  const std::string series =
      db->dialect() == sql::Dialect::postgresql
          ? fmt::format("SELECT g FROM generate_series({}, {}) g", have + 1, rows)
          : fmt::format("WITH RECURSIVE s(g) AS (SELECT {} UNION ALL SELECT g + 1 FROM s WHERE g < {}) SELECT g FROM s",
                        have + 1, rows);
  const std::string sql = "INSERT INTO work (model_id, path, size, mtime_ns) SELECT 'bench', '/bench/' || g, g, g FROM (" +
                          series + ") t";
  sql::in_transaction(*db, true, "fill the queue", [&] { db->exec(sql.c_str(), "fill the queue"); });
  if (db->dialect() == sql::Dialect::postgresql) db->exec("ANALYZE work", "analyze the queue");
}

FileRecord result_for(const InputFile& f) {
  FileRecord r;
  r.path = f.path;
  r.size = f.size;
  r.mtime_ns = f.mtime_ns;
  r.content_hash = fmt::format("{:016x}", uint64_t(f.size) * 0x9E3779B97F4A7C15ull);
  r.model_id = kModel;
  r.width = 4032, r.height = 3024;
  r.tags = {{"person", 0.81f}, {"dog", 0.42f}};
  r.objects = {{"person", 0.81f, {100, 200, 900, 2900}}, {"dog", 0.42f, {1500, 1800, 2600, 2950}},
               {"person", 0.30f, {3000, 300, 3900, 2800}}};
  r.meta.taken_at = "2024-07-14T18:03:22";
  r.meta.make = "Google";
  r.meta.model = "Pixel 8";
  r.decode_ms = 30, r.infer_ms = 2;
  return r;
}

struct WorkerResult {
  int64_t claimed = 0, stored = 0;
  std::vector<double> claim_ms, commit_ms;
  std::string error;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  { Catalog migrate(a.catalog); }
  if (a.rows > 0) fill_queue(a.catalog, a.rows);
  std::vector<WorkerResult> results(size_t(a.workers));
  std::atomic<bool> go{false};
  const auto end_after = std::chrono::duration<double>(a.seconds);
  std::vector<std::thread> threads;
  for (int w = 0; w < a.workers; ++w)
    threads.emplace_back([&, w] {
      WorkerResult& r = results[size_t(w)];
      try {
        Catalog catalog(a.catalog);
        WorkQueue queue(a.catalog, kModel);
        while (!go) std::this_thread::yield();
        const auto start = Clock::now();
        while (Clock::now() - start < end_after) {
          auto t = Clock::now();
          std::vector<InputFile> mine = queue.claim(a.claim);
          r.claim_ms.push_back(ms_since(t));
          if (mine.empty()) break;
          r.claimed += int64_t(mine.size());
          std::vector<FileRecord> batch;
          for (const InputFile& f : mine) batch.push_back(result_for(f));
          t = Clock::now();
          catalog.write(batch);
          r.commit_ms.push_back(ms_since(t));
          r.stored += int64_t(batch.size());
        }
      } catch (const std::exception& e) {
        r.error = e.what();
      }
    });
  const auto start = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  WorkerResult all;
  for (const WorkerResult& r : results) {
    check(r.error.empty(), "a worker failed: " + r.error);
    all.claimed += r.claimed, all.stored += r.stored;
    all.claim_ms.insert(all.claim_ms.end(), r.claim_ms.begin(), r.claim_ms.end());
    all.commit_ms.insert(all.commit_ms.end(), r.commit_ms.begin(), r.commit_ms.end());
  }
  fmt::print("| workers | claim | files claimed/s | files stored/s | claim ms p50 / p99 | commit ms p50 / p99 |\n");
  fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.2f} / {:.2f} | {:.2f} / {:.2f} |\n", a.workers, a.claim,
             double(all.claimed) / wall, double(all.stored) / wall, percentile(all.claim_ms, 0.5),
             percentile(all.claim_ms, 0.99), percentile(all.commit_ms, 0.5), percentile(all.commit_ms, 0.99));
  fmt::print("{{\"workers\": {}, \"claim\": {}, \"seconds\": {:.2f}, \"claimed_per_s\": {:.1f}, \"stored_per_s\": {:.1f}, "
             "\"claim_ms_p50\": {:.3f}, \"claim_ms_p99\": {:.3f}, \"commit_ms_p50\": {:.3f}, \"commit_ms_p99\": {:.3f}}}\n",
             a.workers, a.claim, wall, double(all.claimed) / wall, double(all.stored) / wall,
             percentile(all.claim_ms, 0.5), percentile(all.claim_ms, 0.99), percentile(all.commit_ms, 0.5),
             percentile(all.commit_ms, 0.99));
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "queue_throughput: {}\n", e.what());
  return 1;
}
