// The catalog's crash guarantee: a tagging run SIGKILLed at any moment, then
// re-run (writing every file not up_to_date), ends with exactly the catalog
// of an uninterrupted run: nothing lost, nothing twice (files, tags, objects),
// integrity_check ok.
//
// A forked child plays the tagging run and reports through a pipe: 'B'
// before each Catalog::write, 'E' after. The parent kills it once it has
// begun batch k, plus d microseconds: k and d come from the seed, so the kill
// lands at a chosen batch, before, inside or after its transaction (open,
// migration, rows, COMMIT, a WAL checkpoint). Timing only chooses where the
// kill lands; every assertion holds wherever it lands.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "catalog_test_util.h"
#include "pipeline/catalog.h"
#include "temp_dir.h"

using namespace tandem::pipeline;
using namespace tandem::testing;

namespace {

constexpr int kFiles = 600;

// One `tandem tag` run as the pipeline does it: skip what is up to date,
// write the rest in small batches (sizes 1..4 from `seed`). With a progress
// pipe, writes 'B' before and 'E' after every batch.
void tag_run(const std::string& catalog, const std::vector<FileRecord>& files, unsigned seed,
             int progress_fd) {
  Catalog c(catalog);
  std::mt19937 rng(seed);
  std::vector<FileRecord> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    if (progress_fd >= 0 && ::write(progress_fd, "B", 1) != 1) _exit(4);
    c.write(batch);
    if (progress_fd >= 0 && ::write(progress_fd, "E", 1) != 1) _exit(4);
    batch.clear();
  };
  size_t batch_size = 1 + rng() % 4;
  for (const FileRecord& r : files) {
    if (c.up_to_date(r.path, r.size, r.mtime_ns, r.model_id)) continue;
    batch.push_back(r);
    if (batch.size() == batch_size) {
      flush();
      batch_size = 1 + rng() % 4;
    }
  }
  flush();
}

struct KillResult {
  bool killed = false;     // SIGKILL ended it (else it finished first)
  bool in_write = false;   // ... between a 'B' and its 'E'
  int exit_code = 0;       // when it finished: 0 unless it failed
};

void spin_for(std::chrono::microseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Runs tag_run in a child and SIGKILLs it `delay` after it began batch
// `batch` (counting from 0).
KillResult run_and_kill(const std::string& catalog, const std::vector<FileRecord>& files,
                        unsigned seed, int batch, std::chrono::microseconds delay) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);  // the child must not flush the parent's buffers again
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    try {
      tag_run(catalog, files, seed, fds[1]);
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  ::close(fds[1]);
  char c = 0, last = 0;
  for (int begun = 0; begun <= batch && ::read(fds[0], &c, 1) == 1;) {
    last = c;
    begun += c == 'B';
  }
  spin_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  while (::read(fds[0], &c, 1) == 1) last = c;
  ::close(fds[0]);
  KillResult r;
  r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  r.in_write = r.killed && last == 'B';
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  return r;
}

// A catalog from an earlier run: some files tagged in an older version
// (changed since, to be replaced), some already current.
void earlier_run(const std::string& catalog) {
  std::vector<FileRecord> earlier;
  for (int i = 0; i < kFiles; i += 3) earlier.push_back(synthetic_record(i, 0));
  for (int i = 1; i < kFiles; i += 3) earlier.push_back(synthetic_record(i, 1));
  Catalog(catalog).write(earlier);
}

}  // namespace

TEST(CatalogCrash, KilledRunsThenRerunEqualAnUninterruptedRun) {
  const std::vector<FileRecord> files = synthetic_records(kFiles, 1);
  int64_t tags = 0, objects = 0;
  for (const auto& r : files) tags += int64_t(r.tags.size()), objects += int64_t(r.objects.size());

  int kills = 0, in_write = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // Odd seeds start from no catalog (a kill may land in its creation),
    // even ones from an earlier run's.
    bool fresh = seed % 2 == 1;
    TempDir dir("catalog_crash");
    std::string reference = dir.file("reference.sqlite"), crashed = dir.file("crashed.sqlite");
    if (!fresh) {
      earlier_run(reference);
      earlier_run(crashed);
    }
    tag_run(reference, files, seed, -1);

    std::mt19937 rng(seed * 7919);
    for (int attempt = 0; attempt < 3; ++attempt) {
      int batch = int(rng() % (fresh ? 200 : 100)) / (attempt + 1);
      auto delay = std::chrono::microseconds(rng() % 400);
      KillResult k = run_and_kill(crashed, files, seed + 100 * unsigned(attempt), batch, delay);
      EXPECT_EQ(k.exit_code, 0);
      kills += k.killed;
      in_write += k.in_write;
    }
    tag_run(crashed, files, seed, -1);  // the re-run that completes

    auto want = contents_of(sorted_by_path(files));
    EXPECT_EQ(contents_of(Catalog(reference).records("centernet")), want);
    EXPECT_EQ(contents_of(Catalog(crashed).records("centernet")), want);
    EXPECT_EQ(sqlite3_cli(crashed, "PRAGMA integrity_check; PRAGMA foreign_key_check"), "ok\n");
    EXPECT_EQ(sqlite3_cli(crashed, "SELECT count(*), count(DISTINCT path || '|' || model_id) FROM files"),
              fmt::format("{}|{}\n", kFiles, kFiles));
    EXPECT_EQ(sqlite3_cli(crashed, "SELECT count(*) FROM tags"), fmt::format("{}\n", tags));
    EXPECT_EQ(sqlite3_cli(crashed, "SELECT count(*) FROM objects"), fmt::format("{}\n", objects));
  }
  // Where the kills landed depends on timing, so it is reported, not asserted.
  std::printf("catalog crash: %d of 36 runs killed, %d of them inside Catalog::write\n", kills, in_write);
  ::testing::Test::RecordProperty("killed", kills);
  ::testing::Test::RecordProperty("killed_in_write", in_write);
}
