// The on-disk cache of convolution algorithm choices (cuda/algo_cache.h):
// keys, round trips through the file, damaged and unwritable files, and
// writers racing on one file. Needs no GPU, only the CUDA backend's build.
#ifdef TANDEM_HAVE_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/algo_cache.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

using namespace tandem;
using namespace tandem::cuda;
using tandem::testing::ScopedEnv;
using tandem::testing::TempDir;

namespace {

AlgoDevice h200() { return {"NVIDIA H200", 9, 0, 91900}; }

ConvProblem resnet_conv() {
  ConvProblem p;
  p.dtype = "f16";
  p.layout = "nhwc";
  p.n = 256, p.c = 64, p.h = 56, p.w = 56;
  p.k = 64, p.r = 3, p.s = 3;
  p.pad_h = p.pad_w = 1;
  p.compute_type = 0;
  p.math_type = 1;
  p.fused = "bias+relu";
  return p;
}

ConvProblem with_batch(int64_t n) {
  ConvProblem p = resnet_conv();
  p.n = n;
  return p;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(AlgoCache, KeyNamesEveryFieldOfTheProblemAndTheDevice) {
  std::vector<std::function<void(ConvProblem&)>> changes = {
      [](ConvProblem& p) { p.dtype = "f32"; },
      [](ConvProblem& p) { p.layout = "nchw"; },
      [](ConvProblem& p) { p.n = 128; },
      [](ConvProblem& p) { p.c = 65; },
      [](ConvProblem& p) { p.h = 57; },
      [](ConvProblem& p) { p.w = 57; },
      [](ConvProblem& p) { p.k = 128; },
      [](ConvProblem& p) { p.r = 1; },
      [](ConvProblem& p) { p.s = 1; },
      [](ConvProblem& p) { p.pad_h = 0; },
      [](ConvProblem& p) { p.pad_w = 0; },
      [](ConvProblem& p) { p.stride_h = 2; },
      [](ConvProblem& p) { p.stride_w = 2; },
      [](ConvProblem& p) { p.dilation_h = 2; },
      [](ConvProblem& p) { p.dilation_w = 2; },
      [](ConvProblem& p) { p.groups = 2; },
      [](ConvProblem& p) { p.compute_type = 2; },
      [](ConvProblem& p) { p.math_type = 0; },
      [](ConvProblem& p) { p.fused = ""; },
      [](ConvProblem& p) { p.fused = "bias+relu+residual"; },
      [](ConvProblem& p) { p.direction = "backward-data"; },
      [](ConvProblem& p) { p.direction = "backward-filter"; },
  };
  std::set<std::string> keys = {resnet_conv().key()};
  EXPECT_EQ(resnet_conv().key(), resnet_conv().key());
  for (auto& change : changes) {
    ConvProblem p = resnet_conv();
    change(p);
    keys.insert(p.key());
  }
  EXPECT_EQ(keys.size(), changes.size() + 1) << "some field does not reach the key";
  // Swapping two extents must not give the same key either.
  ConvProblem a = resnet_conv(), b = resnet_conv();
  a.h = 28, a.w = 56, b.h = 56, b.w = 28;
  EXPECT_NE(a.key(), b.key());

  std::set<std::string> device_keys;
  for (AlgoDevice d : {h200(), AlgoDevice{"NVIDIA A100-SXM4-80GB", 8, 0, 91900}, AlgoDevice{"NVIDIA H200", 9, 0, 90100},
                       AlgoDevice{"NVIDIA H200", 9, 1, 91900}})
    device_keys.insert(AlgoCache("unused", d).key(resnet_conv()));
  EXPECT_EQ(device_keys.size(), 4u);
}

TEST(AlgoCache, FileNameIsPerDeviceAndSafe) {
  AlgoDevice a100{"NVIDIA A100-SXM4-80GB / MIG 1g.10gb", 8, 0, 91900};
  std::string name = a100.file_name();
  EXPECT_EQ(name.find('/'), std::string::npos) << name;
  EXPECT_EQ(name.find(' '), std::string::npos) << name;
  EXPECT_NE(name, h200().file_name());
  EXPECT_NE(h200().file_name(), (AlgoDevice{"NVIDIA H200", 9, 0, 90100}).file_name());
}

TEST(AlgoCache, ChoicesSurviveAReload) {
  TempDir dir("algo_cache");
  std::string path = dir.file("sub/cache.json");  // the directory is made on the first store
  ConvChoice c1{1, 1, 4096, true}, c2{6, 0, 0, false};
  ::testing::internal::CaptureStderr();
  {
    AlgoCache cache(path, h200());
    EXPECT_FALSE(cache.find(with_batch(1)).has_value());  // no file yet: no warning either
    cache.store(with_batch(1), c1);
    cache.store(with_batch(2), c2);
    EXPECT_EQ(cache.find(with_batch(1)), c1);
  }
  AlgoCache reloaded(path, h200());
  EXPECT_EQ(reloaded.find(with_batch(1)), c1);
  EXPECT_EQ(reloaded.find(with_batch(2)), c2);
  EXPECT_FALSE(reloaded.find(with_batch(3)).has_value());
  // The same file read for another GPU finds nothing of this one.
  EXPECT_FALSE(AlgoCache(path, {"NVIDIA A100", 8, 0, 91900}).find(with_batch(1)).has_value());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(AlgoCache, DamagedFileWarnsOnceAndIsReplaced) {
  TempDir dir("algo_cache");
  std::string good_path = dir.file("good.json");
  AlgoCache(good_path, h200()).store(with_batch(1), {1, 1, 4096, true});
  std::string good;
  {
    std::ifstream f(good_path);
    good.assign(std::istreambuf_iterator<char>(f), {});
  }
  const std::vector<std::string> damaged = {
      "{not json",
      good.substr(0, good.size() / 2),  // cut short
      "",
      "[1, 2]",
      R"({"format": "1", "entries": {}})",
      R"({"format": 1, "entries": {"x": {"algo": "one", "math_type": 1, "workspace_bytes": 0, "fused": false}}})",
      R"({"format": 1, "entries": {"x": {"algo": -1, "math_type": 1, "workspace_bytes": 0, "fused": false}}})",
  };
  for (const std::string& text : damaged) {
    std::string path = dir.write("damaged.json", text);
    ::testing::internal::CaptureStderr();
    AlgoCache cache(path, h200());
    EXPECT_FALSE(cache.find(with_batch(1)).has_value());
    EXPECT_FALSE(cache.find(with_batch(2)).has_value());
    cache.store(with_batch(2), {6, 0, 0, false});
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "warning"), 1u) << text << ": " << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(AlgoCache(path, h200()).find(with_batch(2)), (ConvChoice{6, 0, 0, false})) << text;
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "the store rewrote the file whole: " << text;
  }
}

TEST(AlgoCache, UnwritableDirectoryWarnsOnceAndKeepsWorking) {
  TempDir dir("algo_cache");
  std::string blocker = dir.write("file", "not a directory");
  AlgoCache cache(blocker + "/sub/cache.json", h200());
  ::testing::internal::CaptureStderr();
  cache.store(with_batch(1), {1, 1, 0, false});
  cache.store(with_batch(2), {2, 1, 0, false});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "warning"), 1u) << err;
  EXPECT_EQ(cache.find(with_batch(2)), (ConvChoice{2, 1, 0, false}));  // this process still remembers
}

TEST(AlgoCache, ConcurrentWritersNeverTearTheFile) {
  TempDir dir("algo_cache");
  std::string path = dir.file("cache.json");
  constexpr int kWriters = 6, kEntries = 25;
  auto choice = [](int writer, int i) { return ConvChoice{writer, i % 3, size_t(writer * 1000 + i), i % 2 == 0}; };
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t)
    threads.emplace_back([&, t] {
      AlgoCache own(path, h200());  // one per thread, as separate processes have
      for (int i = 0; i < kEntries; ++i) own.store(with_batch(1 + t * kEntries + i), choice(t, i));
    });
  // A reader loading the file while it is rewritten must never find it damaged.
  threads.emplace_back([&] {
    for (int i = 0; i < 200; ++i) AlgoCache(path, h200()).find(with_batch(1));
  });
  for (auto& th : threads) th.join();
  AlgoCache last(path, h200());
  int complete_writers = 0;
  for (int t = 0; t < kWriters; ++t) {
    int found = 0;
    for (int i = 0; i < kEntries; ++i) {
      std::optional<ConvChoice> c = last.find(with_batch(1 + t * kEntries + i));
      if (!c) continue;
      EXPECT_EQ(*c, choice(t, i)) << "writer " << t << " entry " << i;
      ++found;
    }
    complete_writers += found == kEntries;
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_GE(complete_writers, 1) << "the last writer's entries are all there";
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string(), "cache.json") << "temporary file left behind";
}

TEST(AlgoCache, DirectoryFromTheEnvironment) {
  ScopedEnv off("TANDEM_ALGO_CACHE", nullptr);
  {
    ScopedEnv dir("TANDEM_CACHE_DIR", "/somewhere/tandem-cache");
    AlgoCache* c = algo_cache(h200());
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->path(), "/somewhere/tandem-cache/" + h200().file_name());
    EXPECT_EQ(algo_cache(h200()), c) << "one cache per file in a process";
  }
  // Where the directory comes from: tandem's cache_dir() (test_cache_dir.cpp).
  ScopedEnv no_dir("TANDEM_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    EXPECT_EQ(algo_cache(h200()), nullptr);
  }
  ScopedEnv disabled("TANDEM_ALGO_CACHE", "0");
  ScopedEnv dir("TANDEM_CACHE_DIR", "/somewhere/tandem-cache");
  EXPECT_EQ(algo_cache(h200()), nullptr);
}
#endif  // TANDEM_HAVE_CUDA
