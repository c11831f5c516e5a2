#pragma once
// Ranks of a data-parallel run as threads of one test process: each
// ThreadRank is a Communicator whose collectives meet the other threads'
// at a barrier, the sums added in rank order (every rank gets the same
// bits, as from MPI or NCCL). For tests of what ranks must agree on,
// without a launcher. The ranks take turns computing (hold_turn() around
// a rank's work; a collective hands the turn on): the CPU kernels keep one
// scratch buffer per oneDNN primitive, shared by every caller of that
// shape in the process, so two ranks computing at once would share it
// (and its kernels' spin barriers), which separate processes never do.
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "train/distributed/communicator.h"

namespace tandem::testing {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size), barrier_(size), parts_(size_t(size)) {}
  int size() const { return size_; }

  // The right to compute, for the length of its scope (released inside
  // each collective while the rank waits for the others).
  std::unique_lock<std::mutex> hold_turn() { return std::unique_lock<std::mutex>(turn_); }

  // Every rank's `values` becomes the sum over ranks, added in rank order.
  template <typename T>
  void sum(int rank, T* values, size_t n) {
    std::vector<double>& mine = parts_[size_t(rank)];
    mine.assign(values, values + n);
    turn_.unlock();
    barrier_.arrive_and_wait();
    for (size_t i = 0; i < n; ++i) {
      T total = T(parts_[0][i]);
      for (int r = 1; r < size_; ++r) total = T(total + T(parts_[size_t(r)][i]));
      values[i] = total;
    }
    barrier_.arrive_and_wait();  // no rank refills its part before all have read
    turn_.lock();
  }

  void broadcast(int rank, void* bytes, size_t n, int root) {
    if (rank == root) parts_[0].assign(static_cast<const char*>(bytes), static_cast<const char*>(bytes) + n);
    turn_.unlock();
    barrier_.arrive_and_wait();
    if (rank != root)
      for (size_t i = 0; i < n; ++i) static_cast<char*>(bytes)[i] = char(parts_[0][i]);
    barrier_.arrive_and_wait();
    turn_.lock();
  }

 private:
  int size_;
  std::barrier<> barrier_;
  std::mutex turn_;  // held by the rank computing; a collective's caller holds it
  std::vector<std::vector<double>> parts_;  // per rank; a float or a byte is exact in a double
};

class ThreadRank : public train::Communicator {
 public:
  ThreadRank(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  int local_rank() const override { return rank_; }
  std::unique_ptr<train::PendingCollective> sum_async(Tensor t) override {
    world_.sum(rank_, t.data<float>(), size_t(t.numel()));
    return std::make_unique<Done>();
  }
  void sum(std::span<double> values) override { world_.sum(rank_, values.data(), values.size()); }
  void broadcast(Tensor t, int root) override { world_.broadcast(rank_, t.raw(), t.bytes(), root); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

 private:
  struct Done : train::PendingCollective {
    void wait() override {}
  };
  ThreadWorld& world_;
  int rank_;
};

}  // namespace tandem::testing
