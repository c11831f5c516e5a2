// SharedTasks (pipeline/shared_tasks.h): the face stage's crops, run by
// the posting thread and by whichever decoder threads help; and
// BatchRing::claim_for, the decoders' wait for a slot that lets them help.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "pipeline/batch_ring.h"
#include "pipeline/shared_tasks.h"

namespace tandem::pipeline {
namespace {

TEST(SharedTasks, EveryTaskRunsOnceWithOrWithoutHelpers) {
  for (int helpers : {0, 1, 4}) {
    SharedTasks tasks;
    std::atomic<bool> stop{false};
    std::atomic<int> helped{0};
    std::vector<std::thread> pool;
    for (int h = 0; h < helpers; ++h)
      pool.emplace_back([&] {
        while (!stop)
          if (tasks.help())
            ++helped;
          else
            std::this_thread::yield();
      });
    for (int round = 0; round < 50; ++round) {
      const size_t n = size_t(round % 7);  // 0 tasks too
      std::vector<std::atomic<int>> runs(n);
      tasks.run(n, [&](size_t k) {
        ++runs[k];
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
      // run() returns only after every task has run, once.
      for (size_t k = 0; k < n; ++k) EXPECT_EQ(runs[k].load(), 1) << "round " << round << " task " << k;
    }
    stop = true;
    for (std::thread& t : pool) t.join();
    if (helpers == 0) EXPECT_EQ(helped.load(), 0);
    EXPECT_FALSE(tasks.help());  // nothing posted between runs
  }
}

// Two face stages post their batches' crops at once: each poster's run()
// returns once its own tasks have run, and every task runs once.
TEST(SharedTasks, SeveralPostersAtOnceEachGetTheirOwnTasksDone) {
  SharedTasks tasks;
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int h = 0; h < 3; ++h)
    pool.emplace_back([&] {
      while (!stop)
        if (!tasks.help()) std::this_thread::yield();
    });
  constexpr int kPosters = 3, kRounds = 40;
  std::vector<std::thread> posters;
  std::atomic<int> wrong{0};
  for (int p = 0; p < kPosters; ++p)
    posters.emplace_back([&, p] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t n = size_t((round + p) % 9);
        std::vector<std::atomic<int>> runs(n);
        tasks.run(n, [&](size_t k) {
          ++runs[k];
          std::this_thread::sleep_for(std::chrono::microseconds(p == 0 ? 2000 : 20));
        });
        for (size_t k = 0; k < n; ++k) wrong += runs[k].load() != 1;
      }
    });
  for (std::thread& t : posters) t.join();
  stop = true;
  for (std::thread& t : pool) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_FALSE(tasks.help());
}

TEST(BatchRing, ClaimForWaitsAtMostItsTimeAndGetsAFreedSlot) {
  BatchRing ring(2, 1);
  BatchRing::Claim a = ring.claim(), b = ring.claim();  // both buffers taken
  EXPECT_FALSE(ring.claim_for(std::chrono::milliseconds(0)));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(ring.claim_for(std::chrono::milliseconds(20)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(20));
  ring.commit(a);
  ring.commit(b);
  std::optional<BatchRing::Batch> first = ring.take(std::chrono::milliseconds(0));
  ASSERT_TRUE(first);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ring.release(first->buffer);
  });
  std::optional<BatchRing::Claim> c = ring.claim_for(std::chrono::seconds(10));
  release.join();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->buffer, first->buffer);
  ring.commit(*c);
  ring.finish();
}

}  // namespace
}  // namespace tandem::pipeline
