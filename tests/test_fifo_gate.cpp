// The gallery server's gate for catalog reads (gallery/fifo_gate.h): never
// more holders than its width, and waiters let in in the order they came.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gallery/fifo_gate.h"

namespace tandem::testing {
namespace {

using gallery::FifoGate;

// Waits (bounded) until `n` passes are queued at the gate.
bool wait_queued(FifoGate& gate, size_t n) {
  for (int i = 0; i < 5000; ++i) {
    if (gate.queued() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(FifoGate, LetsWaitersInInTheOrderTheyCame) {
  FifoGate gate(1);
  std::vector<int> order;
  std::mutex order_mu;
  std::vector<std::thread> threads;
  {
    FifoGate::Pass first(gate);
    // Each waiter queues before the next starts: arrival order is 0..7.
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        FifoGate::Pass pass(gate);
        std::lock_guard lock(order_mu);
        order.push_back(i);
      });
      ASSERT_TRUE(wait_queued(gate, size_t(i + 1))) << "waiter " << i << " never queued";
    }
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(gate.queued(), 0u);
}

TEST(FifoGate, NeverHoldsMoreThanItsWidth) {
  FifoGate gate(3);
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        FifoGate::Pass pass(gate);
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --inside;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 2) << "the gate let fewer in than its width allows";
  EXPECT_EQ(gate.queued(), 0u);
}

}  // namespace
}  // namespace tandem::testing
