// pipeline/prefetch_thread.h: one job at a time on a thread of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.h"
#include "pipeline/prefetch_thread.h"

namespace {

using tandem::pipeline::PrefetchThread;

TEST(PrefetchThread, RunsEachJobOnOneOtherThreadAndHandsBackItsResult) {
  PrefetchThread<std::thread::id> t("prefetch-test");
  EXPECT_FALSE(t.pending());
  t.start([] { return std::this_thread::get_id(); });
  EXPECT_TRUE(t.pending());
  const std::thread::id first = t.take();
  EXPECT_FALSE(t.pending());
  EXPECT_NE(first, std::this_thread::get_id());
  t.start([] { return std::this_thread::get_id(); });
  EXPECT_EQ(t.take(), first) << "one thread for every job";
}

TEST(PrefetchThread, TakeWaitsForASlowJobAndRethrowsAFailure) {
  PrefetchThread<int> t("prefetch-test");
  t.start([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return 7;
  });
  EXPECT_EQ(t.take(), 7);
  t.start([]() -> int { throw std::runtime_error("unreadable"); });
  EXPECT_THROW(t.take(), std::runtime_error);
  EXPECT_FALSE(t.pending());
  t.start([] { return 8; });  // usable again after a failure
  EXPECT_EQ(t.take(), 8);
}

TEST(PrefetchThread, MisuseIsAnErrorAndDestructionFinishesAStartedJob) {
  std::atomic<bool> ran{false};
  {
    PrefetchThread<int> t("prefetch-test");
    EXPECT_THROW(t.take(), tandem::Error);  // nothing started
    t.start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ran = true;
      return 1;
    });
    EXPECT_THROW(t.start([] { return 2; }), tandem::Error);  // the first is not taken
  }
  EXPECT_TRUE(ran);
}

}  // namespace
