// Device placement with a CPU fallback (graph/partition.h,
// graph/partitioned_plan.h). The "device" is the CPU backend under another
// device's name, without kernels for some op types and refusing others at
// prepare, as the CUDA backend does; the reference is the same graph run on
// the plain CPU backend, which must match bit for bit (the same kernels run
// either way, only the placement and the copies differ).
#include <gtest/gtest.h>

#include <set>

#include "cpu/cpu_backend.h"
#include "graph/partition.h"
#include "graph/session.h"
#include "tests/cpu_memory_backend.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

class PartialDevice final : public CpuMemoryBackend {
 public:
  std::set<std::string> missing;  // op types it has no kernel for
  std::set<std::string> refused;  // op types whose kernels refuse every node at prepare
  int prepared = 0;

  std::string name() const override { return "test device"; }
  Device device() const override { return Device::cuda(7); }
  bool supports(const OpDesc& op) const override { return !missing.count(op.op_type) && cpu().supports(op); }
  KernelPlan prepare(const OpDesc& op) override {
    if (refused.count(op.op_type)) throw Error::unsupported("test device: refuses this op", op.context());
    ++prepared;
    return cpu().prepare(op);
  }
};

// x -> Relu -> Neg -> Add(x) -> Sigmoid -> Mul(relu): the middle ops on
// one side, the ends on the other, the Relu read across two segments.
Graph chain() {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 5, 7});
  ValueId r = b.node("Relu", {x});
  ValueId n = b.node("Neg", {r});
  ValueId a = b.node("Add", {n, x});
  ValueId s = b.node("Sigmoid", {a});
  b.output(b.node("Mul", {s, r}));
  b.output(n);  // a crossing value the caller receives too
  return b.g;
}

std::vector<Tensor> on_cpu(const Graph& g, const std::vector<Tensor>& in) { return Session(g).run(in); }

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].desc(), want[i].desc()) << "output " << i;
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].bytes()), 0) << "output " << i;
  }
}

Session on_device(const Graph& g, PartialDevice& dev, bool strict = false) {
  SessionOptions o;
  o.backend = &dev;
  o.strict_device = strict;
  return Session(g, o);
}

TEST(Partition, MissingKernelsRunOnTheCpuWithTheSameResults) {
  PartialDevice dev;
  dev.missing = {"Neg", "Add"};
  Session s = on_device(chain(), dev);
  std::vector<Tensor> in = {random_tensor({2, 3, 5, 7}, 1)};
  const PartitionedPlan& plan = s.prepare(in);
  ASSERT_EQ(plan.parts().size(), 3u);  // device, cpu, device
  EXPECT_FALSE(plan.parts()[0].on_fallback);
  EXPECT_TRUE(plan.parts()[1].on_fallback);
  EXPECT_FALSE(plan.parts()[2].on_fallback);
  EXPECT_EQ(plan.fallback().nodes, 2);
  EXPECT_EQ(plan.fallback().ops, "Neg, Add");
  // relu and x into the CPU part (x comes from the caller, no crossing),
  // the sum back to the device: relu and the sum cross.
  EXPECT_EQ(plan.fallback().crossings, 2);
  std::vector<Tensor> want = on_cpu(chain(), in);
  expect_same(s.run(in), want);
  // Kept page-locked crossing buffers must not leak one run into the next.
  std::vector<Tensor> in2 = {random_tensor({2, 3, 5, 7}, 2)};
  std::vector<Tensor> first = s.run(in);
  expect_same(s.run(in2), on_cpu(chain(), in2));
  expect_same(first, want);
  EXPECT_GT(s.fallback_ms(), 0.0);
}

TEST(Partition, NodesOfOneDeviceStayTogetherWhenDependenciesAllow) {
  // Two independent branches, each Relu -> Neg -> Relu: in graph order the
  // devices alternate six times; grouped, it is device, cpu, device.
  GraphBuilder b;
  ValueId x = b.input("x", {4, 8});
  ValueId r1 = b.node("Relu", {x});
  ValueId r2 = b.node("Relu", {x});
  ValueId n1 = b.node("Neg", {r1});
  ValueId n2 = b.node("Neg", {r2});
  ValueId s1 = b.node("Sigmoid", {n1});
  ValueId s2 = b.node("Sigmoid", {n2});
  b.output(b.node("Add", {s1, s2}));
  PartialDevice dev;
  dev.missing = {"Neg"};
  std::vector<bool> fb = place_on_fallback(b.g, dev, {});
  EXPECT_EQ(split_segments(b.g, fb).size(), 3u);
  Session s = on_device(b.g, dev);
  std::vector<Tensor> in = {random_tensor({4, 8}, 3)};
  expect_same(s.run(in), on_cpu(b.g, in));
}

TEST(Partition, AKernelRefusedAtPrepareFallsBackToo) {
  PartialDevice dev;
  dev.refused = {"Sigmoid"};
  Session s = on_device(chain(), dev);
  std::vector<Tensor> in = {random_tensor({2, 3, 5, 7}, 4)};
  expect_same(s.run(in), on_cpu(chain(), in));
  EXPECT_EQ(s.fallback().nodes, 1);
  EXPECT_EQ(s.fallback().ops, "Sigmoid");
}

TEST(Partition, AGraphTheDeviceRunsWhollyIsOnePart) {
  PartialDevice dev;
  Session s = on_device(chain(), dev);
  std::vector<Tensor> in = {random_tensor({2, 3, 5, 7}, 5)};
  EXPECT_EQ(s.prepare(in).parts().size(), 1u);
  EXPECT_EQ(s.fallback().nodes, 0);
  expect_same(s.run(in), on_cpu(chain(), in));
}

TEST(Partition, StrictDeviceNamesTheNodeInsteadOfFallingBack) {
  PartialDevice dev;
  dev.missing = {"Neg"};
  Session s = on_device(chain(), dev, /*strict=*/true);
  try {
    s.run({random_tensor({2, 3, 5, 7}, 6)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_EQ(e.context().op, "Neg");
    EXPECT_EQ(e.context().node, "Neg_1");
    EXPECT_NE(std::string(e.what()).find("test device"), std::string::npos) << e.what();
  }
}

TEST(Partition, AnOpWithNoKernelAnywhereFailsWhenTheModelIsOpened) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 2});
  b.output(b.node("NoSuchOp", {b.node("Relu", {x})}));
  PartialDevice dev;
  try {
    on_device(b.g, dev);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_EQ(e.context().op, "NoSuchOp");
    EXPECT_EQ(e.context().node, "NoSuchOp_1");
  }
}

}  // namespace
