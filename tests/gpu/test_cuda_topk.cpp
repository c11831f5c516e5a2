// A CUDA TopK plan records its kernels into a CUDA graph at its second run
// and replays it after: each path's kernels (scratch, CUB's sort) must
// replay on new inputs as they ran, values and indices identical to the
// CPU backend's. TopK's paths, ties, NaNs, dtypes and empty inputs
// themselves are cases of tests/backend_ops.
#include <string>

#include "../graph_builder.h"
#include "../topk_inputs.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

struct TopKCase {
  Shape in;
  int64_t k, axis = -1, largest = 1;
  std::string str() const {
    return shape_str(in) + " k=" + std::to_string(k) + " axis=" + std::to_string(axis) +
           (largest ? " largest" : " smallest");
  }
};

Graph topk_graph(const TopKCase& c, DType t) {
  GraphBuilder b;
  ValueId x = b.input("x", c.in, t);
  Attributes a;
  a.set("axis", c.axis);
  a.set("largest", c.largest);
  a.set("sorted", int64_t(1));
  ValueId values =
      b.node("TopK", {x, b.constant("k", Tensor::from_vector<int64_t>({c.k}, {1}))}, a, 2);
  b.output(values);
  b.output(values + 1);  // the indices
  return b.g;
}

TEST(CudaTopK, RecordedPlansReplayOnNewInputs) {
  TANDEM_REQUIRE_GPU();
  uint32_t seed = 90;
  for (TopKCase c : {TopKCase{{3, 500}, 20}, TopKCase{{4, 9000}, 100}, TopKCase{{2, 5000}, 3000}}) {
    Graph g = topk_graph(c, DType::f32);
    Session cpu(g), gpu(g, SessionOptions::on(Device::cuda(0)));
    for (int run = 0; run < 4; ++run) {
      Tensor x = run % 2 ? tied_values(c.in, seed++) : shuffled_values(c.in, seed++);
      std::vector<Tensor> want = cpu.run({x}), got = gpu.run({x});
      const std::string at = c.str() + " run " + std::to_string(run);
      expect_identical(got[1], want[1], "indices " + at);
      expect_identical(got[0], want[0], "values " + at);
    }
  }
}

}  // namespace
}  // namespace tandem::testing
