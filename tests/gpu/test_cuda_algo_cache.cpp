// The convolution algorithm cache (cuda/algo_cache.h) on the GPU: the first
// session measures and writes the cache file; a second one takes every
// choice from it (the file is not replaced); damaged entries are measured
// again. Each result is checked against the CPU backend (fp32, relative
// error <= 1e-5; the CPU forced to direct convolution as in test_cuda_conv).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "../graph_builder.h"
#include "../scoped_env.h"
#include "../temp_dir.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

// x [2,16,12,12] -> FusedConv-able Conv 3x3 + bias + Relu -> Conv 1x1 (no bias).
Graph two_convs() {
  GraphBuilder b;
  ValueId x = b.input("x", {-1, 16, 12, 12});
  Attributes pads;
  pads.set("pads", Shape{1, 1, 1, 1});
  ValueId w1 = b.constant("w1", random_f32({32, 16, 3, 3}, 41, -0.5f, 0.5f));
  ValueId b1 = b.constant("b1", random_f32({32}, 42));
  ValueId w2 = b.constant("w2", random_f32({8, 32, 1, 1}, 43, -0.5f, 0.5f));
  ValueId a = b.node("Relu", {b.node("Conv", {x, w1, b1}, pads)});
  b.output(b.node("Conv", {a, w2}));
  return b.g;
}

// The one cache file in `dir`.
std::filesystem::path cache_file(const TempDir& dir) {
  std::filesystem::path found;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().extension() == ".json") found = e.path(), ++n;
  EXPECT_EQ(n, 1) << "cache files in " << dir.path();
  return found;
}

ino_t inode(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_ino;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
}

double gpu_error(const Graph& g, const Tensor& x, const std::vector<Tensor>& cpu) {
  SessionOptions gpu;
  gpu.device = Device::cuda(0);
  return relative_error(Session(g, gpu).run({x})[0], cpu[0]);
}

}  // namespace

TEST(CudaAlgoCache, CachedChoicesAreUsedAndDamagedOnesMeasuredAgain) {
  TANDEM_REQUIRE_GPU();
  TempDir dir("gpu_algo_cache");
  ScopedEnv cache_dir("TANDEM_CACHE_DIR", dir.path().c_str());
  ScopedEnv enabled("TANDEM_ALGO_CACHE", nullptr);
  ScopedEnv direct("TANDEM_CONV_ALGO", "direct");
  Graph g = two_convs();
  Tensor x = random_f32({2, 16, 12, 12}, 44);
  std::vector<Tensor> cpu = Session(g).run({x});

  EXPECT_LE(gpu_error(g, x, cpu), 1e-5) << "measured";
  std::filesystem::path file = cache_file(dir);
  ASSERT_FALSE(file.empty());
  nlohmann::json doc = read_json(file);
  ASSERT_GE(doc["entries"].size(), 2u) << doc.dump(1);

  // Every choice found: nothing is stored, so the file is not replaced.
  ino_t before = inode(file);
  EXPECT_LE(gpu_error(g, x, cpu), 1e-5) << "from the cache";
  EXPECT_EQ(inode(file), before) << "a choice was measured again";

  // Winograd is refused for fp32 and no workspace is that large: both
  // entries are measured again and the file rewritten with usable ones.
  constexpr int kWinogradNonfused = 7;  // CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED
  for (auto& [key, e] : doc["entries"].items()) {
    e["algo"] = kWinogradNonfused;
    e["workspace_bytes"] = size_t(1) << 40;
  }
  std::string damaged = file.string() + ".new";
  std::ofstream(damaged) << doc.dump(1);
  std::filesystem::rename(damaged, file);
  // This process's cache already holds the good entries; a fresh process
  // would read the damaged ones. Emulate it with a second cache directory.
  TempDir dir2("gpu_algo_cache");
  std::filesystem::copy_file(file, dir2.path() / file.filename());
  ScopedEnv cache_dir2("TANDEM_CACHE_DIR", dir2.path().c_str());
  EXPECT_LE(gpu_error(g, x, cpu), 1e-5) << "after damaged entries";
  for (auto& [key, e] : read_json(cache_file(dir2))["entries"].items()) {
    EXPECT_NE(e["algo"], kWinogradNonfused) << key;
    EXPECT_LE(e["workspace_bytes"].get<size_t>(), size_t(256) << 20) << key;
  }
}

}  // namespace tandem::testing
