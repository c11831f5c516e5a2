// FileFeed (pipeline/file_feed.h), the files of a tag run: a fixed list
// and files that arrive while the run goes on, taken by many threads at
// once, give every file exactly once; more is asked for while files are
// still left (the decoders never find the feed empty between claims); an
// empty arrival ends the feed; a failing request reaches the taker.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "pipeline/file_feed.h"

namespace tandem::pipeline {
namespace {

std::vector<InputFile> named(int first, int n) {
  std::vector<InputFile> v;
  for (int i = first; i < first + n; ++i) v.push_back({"f" + std::to_string(i), i, i});
  return v;
}

std::multiset<std::string> take_all(FileFeed& feed, int threads) {
  std::multiset<std::string> seen;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      while (std::optional<InputFile> f = feed.take()) {
        std::lock_guard<std::mutex> lock(mu);
        seen.insert(f->path);
      }
    });
  for (std::thread& t : ts) t.join();
  return seen;
}

TEST(FileFeed, AFixedListGivesEachFileOnce) {
  const std::vector<InputFile> files = named(0, 1000);
  FileFeed feed(files);
  std::multiset<std::string> seen = take_all(feed, 8);
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 1000u);
  EXPECT_FALSE(feed.may_have_more());
  EXPECT_EQ(feed.received(), 1000);
}

TEST(FileFeed, ArrivingFilesAreAskedForBeforeTheFeedRunsDry) {
  std::atomic<int> asked{0}, asked_while_empty{0};
  FileFeed* self = nullptr;
  FileFeed feed(
      [&] {
        const int k = asked++;
        if (self && k > 0 && self->left() == 0) ++asked_while_empty;
        return k < 20 ? named(k * 50, 50) : std::vector<InputFile>{};
      },
      50);
  self = &feed;
  std::atomic<int64_t> arrived{0};
  feed.on_arrival = [&](size_t n) { arrived += int64_t(n); };
  // One taker: with several, another may empty what is left while one asks.
  std::multiset<std::string> seen = take_all(feed, 1);
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 1000u);
  EXPECT_EQ(asked.load(), 21) << "20 arrivals and the empty one that ends the feed";
  EXPECT_EQ(asked_while_empty.load(), 0) << "more was asked for only once the feed was empty";
  EXPECT_EQ(arrived.load(), 1000);
  EXPECT_EQ(feed.received(), 1000);
}

TEST(FileFeed, ManyTakersGetEveryArrivingFileOnce) {
  std::atomic<int> asked{0};
  FileFeed feed([&] { const int k = asked++; return k < 40 ? named(k * 25, 25) : std::vector<InputFile>{}; }, 25);
  std::multiset<std::string> seen = take_all(feed, 8);
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 1000u);
  EXPECT_FALSE(feed.may_have_more());
}

TEST(FileFeed, AFailingRequestReachesTheTaker) {
  int asked = 0;
  FileFeed feed([&]() -> std::vector<InputFile> {
    if (asked++ == 0) return named(0, 3);
    throw std::runtime_error("the database went away");
  }, 1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(feed.take().has_value()) << "file " << i;  // the third asks, and fails
  EXPECT_THROW(feed.take(), std::runtime_error);
  EXPECT_THROW(feed.take(), std::runtime_error);
}

}  // namespace
}  // namespace tandem::pipeline
