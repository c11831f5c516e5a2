// Gradient sums over NCCL (cuda/nccl_group.h, train/distributed): one rank
// keeps its values; GradientSync over an NCCL world gives each gradient
// times this rank's share, its buckets several sums in flight; with two
// GPUs, two ranks (threads of one process) get the sum of their buffers,
// uploaded on the compute stream without a wait, so a sum that did not wait
// for the compute stream's earlier work would read stale bytes. Each test
// skips where there is no GPU or no NCCL, the two-rank one with fewer than
// two GPUs.
#include <thread>

#include "cuda/nccl_group.h"
#include "train/distributed/communicator.h"
#include "train/distributed/gradient_sync.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

#define TANDEM_REQUIRE_NCCL()                                                  \
  do {                                                                         \
    TANDEM_REQUIRE_GPU();                                                      \
    std::string why_not;                                                       \
    if (!cuda::nccl_available(&why_not)) GTEST_SKIP() << "no NCCL: " << why_not; \
  } while (0)

// Values that differ per element and per seed, exactly representable sums.
Tensor counting(int64_t n, float base) {
  Tensor t = Tensor::empty(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = base + float(i % 1024);
  return t;
}

TEST(NcclSum, OneRankKeepsItsValues) {
  TANDEM_REQUIRE_NCCL();
  cuda::NcclGroup group(0, 1, 0, cuda::nccl_unique_id());
  const int64_t n = int64_t(1) << 20;
  const Tensor host = counting(n, 3);
  Tensor dev = up(host);
  std::unique_ptr<cuda::NcclGroup::Pending> p = group.sum_async(dev.data<float>(), size_t(n));
  p->wait();
  expect_same_bits(dev, host, "one rank's sum");
}

TEST(NcclSum, GradientSyncScalesEachGradientByTheRanksShare) {
  TANDEM_REQUIRE_NCCL();
  std::unique_ptr<train::Communicator> world = train::with_nccl(train::solo_world(), 0);
  std::vector<train::Parameter> params(5);
  std::vector<Tensor> expected;
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor g = random_f32({int64_t(1000 * (k + 1))}, uint32_t(k + 1));
    params[k].name = "p" + std::to_string(k);
    params[k].value = up(g);
    params[k].grad = up(g);
    Tensor e = g.clone();
    for (int64_t i = 0; i < e.numel(); ++i) e.data<float>()[i] *= 0.25f;
    expected.push_back(e);
  }
  train::ParameterList list;
  for (train::Parameter& p : params) list.push_back(&p);
  // Buckets of about two parameters: several sums in flight at once.
  train::GradientSync sync(*world, list, 12000);
  EXPECT_GT(sync.buckets(), 2);
  for (int step = 0; step < 2; ++step) {
    sync.begin(step == 0 ? 0.25 : 1.0);
    for (size_t k = params.size(); k-- > 0;) sync.gradient_ready(params[k].grad);
    sync.finish();
  }
  for (size_t k = 0; k < params.size(); ++k) expect_same_bits(params[k].grad, expected[k], params[k].name);
}

TEST(NcclSum, TwoGpusSumTheirBuffers) {
  TANDEM_REQUIRE_NCCL();
  if (cuda::device_count() < 2) GTEST_SKIP() << "one GPU here: two NCCL ranks need two";
  const std::string id = cuda::nccl_unique_id();
  const int64_t n = int64_t(16) << 20;  // 64 MiB a rank
  Tensor results[2];
  std::string errors[2];
  // Each rank joins from a thread of its own: joining waits for the other.
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      try {
        cuda::NcclGroup group(r, 2, r, id);
        Tensor dev = cuda::to_device(counting(n, float(r + 1)), r);
        group.sum_async(dev.data<float>(), size_t(n))->wait();
        results[r] = cuda::to_host(dev);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  const Tensor want = counting(n, 0);
  for (int64_t i = 0; i < n; ++i) want.data<float>()[i] = 2 * want.data<float>()[i] + 3;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(errors[r].empty()) << "rank " << r << ": " << errors[r];
    expect_identical(results[r], want, "rank " + std::to_string(r) + "'s sum");
  }
}

}  // namespace
}  // namespace tandem::testing
