// The pool of network input buffers: memory from the backend's own host
// allocator (pinned on a GPU), reused by shape, handed back to it.
#include <gtest/gtest.h>

#include <set>

#include "pipeline/host_tensor_pool.h"
#include "tests/cpu_memory_backend.h"

namespace tandem {
namespace {

using pipeline::HostTensorPool;

// Counts what the pool asks of the backend's host allocator.
class CountingHost final : public testing::CpuMemoryBackend {
 public:
  int allocated = 0, freed = 0;
  std::set<void*> live;

  std::string name() const override { return "counting host"; }
  Device device() const override { return Device::cuda(3); }
  bool supports(const OpDesc& op) const override { return cpu().supports(op); }
  KernelPlan prepare(const OpDesc& op) override { return cpu().prepare(op); }
  void* allocate_host(size_t bytes) override {
    void* p = Backend::allocate_host(bytes);
    ++allocated, live.insert(p);
    return p;
  }
  void deallocate_host(void* p) override {
    ASSERT_EQ(live.erase(p), 1u) << "freed memory the pool did not take from this backend";
    ++freed;
    Backend::deallocate_host(p);
  }
};

TEST(HostTensorPool, TensorsComeFromTheBackendAndGoBackToIt) {
  CountingHost host;
  {
    HostTensorPool pool(host);
    Tensor t = pool.take(DType::f32, {4, 8, 8, 3});
    EXPECT_EQ(t.desc(), (TensorDesc{DType::f32, {4, 8, 8, 3}}));
    EXPECT_TRUE(t.device().is_cpu());
    EXPECT_EQ(host.live.count(t.raw()), 1u);
    t.data<float>()[4 * 8 * 8 * 3 - 1] = 1.f;  // the whole tensor is writable
    pool.give(std::move(t));
    EXPECT_EQ(host.freed, 0) << "a spare is kept for reuse";
  }
  EXPECT_EQ(host.allocated, 1);
  EXPECT_EQ(host.freed, 1) << "the pool's spares go back to the backend with it";
}

TEST(HostTensorPool, ReusesASpareOfTheSameShapeOnly) {
  CountingHost host;
  HostTensorPool pool(host);
  Tensor a = pool.take(DType::f32, {8, 4, 4, 3});
  const void* first = a.raw();
  pool.give(std::move(a));
  Tensor b = pool.take(DType::f32, {16, 4, 4, 3});
  EXPECT_NE(b.raw(), first) << "another shape gets memory of its own";
  Tensor c = pool.take(DType::f32, {8, 4, 4, 3});
  EXPECT_EQ(c.raw(), first) << "the spare of that shape is reused";
  EXPECT_EQ(host.allocated, 2);
  Tensor d = pool.take(DType::f32, {8, 4, 4, 3});
  EXPECT_NE(d.raw(), first) << "a spare is handed out once";
  EXPECT_EQ(host.allocated, 3);
}

TEST(HostTensorPool, KeepsAtMostItsSparesDroppingTheOldest) {
  CountingHost host;
  HostTensorPool pool(host, 2);
  std::vector<Tensor> taken;
  for (int64_t n = 1; n <= 3; ++n) taken.push_back(pool.take(DType::f32, {n, 2}));
  const void* oldest = taken[0].raw();
  for (Tensor& t : taken) pool.give(std::move(t));
  EXPECT_EQ(host.freed, 1);
  EXPECT_EQ(host.live.count(const_cast<void*>(oldest)), 0u) << "the first given back went first";
  EXPECT_EQ(host.live.size(), 2u);
}

}  // namespace
}  // namespace tandem
