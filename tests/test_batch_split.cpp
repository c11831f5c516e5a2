// A batch that does not fit in device memory runs in smaller batches
// (graph/session.cpp). The device is the CPU backend behind a memory limit
// that fails like the CUDA backend does (ErrorKind::out_of_memory); the
// reference is the same conv net run on the plain CPU backend in one batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "cpu/cpu_backend.h"
#include "graph/session.h"
#include "tests/cpu_memory_backend.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// Runs its kernel's work never: reports the device out of memory instead.
class OutOfMemoryKernel final : public Kernel {
 public:
  explicit OutOfMemoryKernel(int& failures) : failures_(failures) {}
  void run(const void* const*, void* const*, const RunContext&) override {
    ++failures_;
    throw Error::out_of_memory("test: out of memory at run");
  }

 private:
  int& failures_;
};

// The CPU backend as a device short of memory: preparing a kernel whose
// activations (a non-constant input 0) have more than `prepare_batch_limit`
// rows fails (as a CUDA conv's algorithm search buffers would), and so does
// running one with more than `run_batch_limit` rows.
class MemoryLimitedBackend final : public CpuMemoryBackend {
 public:
  int64_t prepare_batch_limit = INT64_MAX;
  int64_t run_batch_limit = INT64_MAX;
  int failures = 0;

  std::string name() const override { return "limited cpu"; }
  Device device() const override { return Device::cpu(); }
  bool supports(const OpDesc& op) const override { return cpu().supports(op); }
  KernelPlan prepare(const OpDesc& op) override {
    int64_t rows = activation_rows(op);
    if (rows > prepare_batch_limit) {
      ++failures;
      throw Error::out_of_memory("test: no memory to prepare " + std::to_string(rows) + " rows", op.context());
    }
    KernelPlan kp = cpu().prepare(op);
    if (kp.kernel && rows > run_batch_limit) kp.kernel = std::make_unique<OutOfMemoryKernel>(failures);
    return kp;
  }

 private:
  static int64_t activation_rows(const OpDesc& op) {
    bool activations = !op.inputs.empty() && !op.inputs[0].shape.empty() &&
                       (op.constants.empty() || op.constants[0] == nullptr);
    return activations ? op.inputs[0].shape[0] : 0;
  }
};

// x [N,3,8,8] -> Conv 3x3 -> Relu -> (Sigmoid: [N,8,8,8]) and
// (Conv 3x3 stride 2: [N,4,4,4]); `batch` is the declared dim 0.
Graph conv_net(int64_t batch = -1) {
  GraphBuilder b;
  ValueId x = b.input("x", {batch, 3, 8, 8});
  Attributes pads;
  pads.set("pads", Shape{1, 1, 1, 1});
  Attributes strided = pads;
  strided.set("strides", Shape{2, 2});
  ValueId w1 = b.constant("w1", random_tensor({8, 3, 3, 3}, 31, -0.5f, 0.5f));
  ValueId w2 = b.constant("w2", random_tensor({4, 8, 3, 3}, 32, -0.5f, 0.5f));
  ValueId a = b.node("Relu", {b.node("Conv", {x, w1}, pads)});
  b.output(b.node("Sigmoid", {a}));
  b.output(b.node("Conv", {a, w2}, strided));
  return b.g;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    // Other batch sizes may take other oneDNN kernels: float rounding only.
    EXPECT_LE(max_abs_diff(got[i], want[i]), 1e-5 * max_abs(want[i])) << "output " << i;
  }
}

// Runs `x` on `s`, checks the outputs against the plain CPU backend's in
// one batch, and returns what went to stderr.
std::string run_and_compare(Session& s, const Tensor& x) {
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> got;
  try {
    got = s.run({x});
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    throw;
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  expect_same(got, Session(conv_net()).run({x}));
  return err;
}

SessionOptions on(Backend& b) {
  SessionOptions o;
  o.backend = &b;
  return o;
}

}  // namespace

TEST(BatchSplit, BatchOverTheMemoryAtCompileRunsInHalvesWithOneWarning) {
  MemoryLimitedBackend dev;
  dev.prepare_batch_limit = 2;  // 8 and 4 fail, 2 compiles
  Session s(conv_net(), on(dev));
  Tensor x = random_tensor({8, 3, 8, 8}, 33);
  std::string warning = run_and_compare(s, x);
  EXPECT_NE(warning.find("a batch of 8 does not fit"), std::string::npos) << warning;
  EXPECT_NE(warning.find("in batches of 2"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("warning", warning.find("warning") + 1), std::string::npos) << "one warning: " << warning;

  // The next run of that shape starts at the size that fit: no failure, no warning.
  int failures = dev.failures;
  EXPECT_EQ(run_and_compare(s, x), "");
  EXPECT_EQ(dev.failures, failures);
}

TEST(BatchSplit, OddBatchSplitsUnevenly) {
  MemoryLimitedBackend dev;
  dev.prepare_batch_limit = 2;  // 7 -> 4 (-> 2 + 2) + 3 (-> 2 + 1)
  Session s(conv_net(), on(dev));
  std::string warning = run_and_compare(s, random_tensor({7, 3, 8, 8}, 34));
  EXPECT_NE(warning.find("a batch of 7 does not fit"), std::string::npos) << warning;
  EXPECT_NE(warning.find("in batches of 2"), std::string::npos) << warning;
}

TEST(BatchSplit, OutOfMemoryAtRunSplitsToo) {
  MemoryLimitedBackend dev;
  dev.run_batch_limit = 3;  // 8 and 4 fail, 2 runs
  Session s(conv_net(), on(dev));
  std::string warning = run_and_compare(s, random_tensor({8, 3, 8, 8}, 35));
  EXPECT_GT(dev.failures, 0);
  EXPECT_NE(warning.find("a batch of 8 does not fit"), std::string::npos) << warning;
  EXPECT_NE(warning.find("in batches of 2"), std::string::npos) << warning;
}

ErrorKind kind_of_run(Session& s, const Tensor& x) {
  try {
    s.run({x});
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected an error";
  return ErrorKind::invalid;
}

TEST(BatchSplit, OutOfMemoryAtBatchOneStillThrows) {
  MemoryLimitedBackend dev;
  dev.prepare_batch_limit = 0;
  Session s(conv_net(), on(dev));
  EXPECT_EQ(kind_of_run(s, random_tensor({1, 3, 8, 8}, 36)), ErrorKind::out_of_memory);
  // Halved down to one row, which fails too.
  EXPECT_EQ(kind_of_run(s, random_tensor({4, 3, 8, 8}, 37)), ErrorKind::out_of_memory);
}

TEST(BatchSplit, FixedBatchIsNotSplit) {
  MemoryLimitedBackend dev;
  dev.prepare_batch_limit = 1;
  Session s(conv_net(4), on(dev));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(kind_of_run(s, random_tensor({4, 3, 8, 8}, 38)), ErrorKind::out_of_memory);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(BatchSplit, OutputNotBatchedAlongDimZeroKeepsTheError) {
  // The output is the mean over the batch, [64,32]: halves cannot give it.
  GraphBuilder b;
  ValueId x = b.input("x", {-1, 64, 32});
  Attributes over_batch;
  over_batch.set("axes", Shape{0});
  over_batch.set("keepdims", int64_t(0));
  b.output(b.node("ReduceMean", {b.node("Relu", {x})}, over_batch));
  MemoryLimitedBackend dev;
  dev.run_batch_limit = 1;
  Session s(b.g, on(dev));
  EXPECT_EQ(kind_of_run(s, random_tensor({2, 64, 32}, 39)), ErrorKind::out_of_memory);
}
