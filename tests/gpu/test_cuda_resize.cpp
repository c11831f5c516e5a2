// A CUDA Resize plan records its kernels into a CUDA graph at its second run
// and replays it after, on new inputs: the replays agree with the CPU
// backend within 1e-5 of the reference norm, on a plain input and on an
// nhwc one (a 1x1 MaxPool first, an exact copy, makes the input arrive in
// the layout CUDA convolutions produce). Resize's modes, coordinates and
// dtypes themselves are cases of tests/backend_ops.
#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

// x [-> MaxPool 1x1] -> Resize-19, linear, to constant sizes.
Graph resize_graph(const Shape& in, const std::vector<int64_t>& sizes, bool nhwc) {
  GraphBuilder b;
  b.g.opset = 19;
  ValueId x = b.input("x", in);
  if (nhwc) {
    Attributes pool;
    pool.set("kernel_shape", Shape{1, 1});
    x = b.node("MaxPool", {x}, pool);
  }
  Attributes a;
  a.set("mode", std::string("linear"));
  ValueId s = b.constant("sizes", Tensor::from_vector(sizes, {int64_t(sizes.size())}));
  b.output(b.node("Resize", {x, kNoValue, kNoValue, s}, a));
  return b.g;
}

TEST(CudaResize, RecordedPlansReplayOnNewInputs) {
  TANDEM_REQUIRE_GPU();
  const Shape in = {2, 64, 16, 16};
  for (bool nhwc : {false, true}) {
    Graph g = resize_graph(in, {2, 64, 32, 32}, nhwc);
    Session cpu(g), gpu(g, SessionOptions::on(Device::cuda(0)));
    for (int run = 0; run < 4; ++run) {
      Tensor x = random_f32(in, 200 + uint32_t(run));
      EXPECT_LE(relative_error(gpu.run({x})[0], cpu.run({x})[0]), 1e-5)
          << (nhwc ? "nhwc" : "plain") << " run " << run;
    }
  }
}

}  // namespace
}  // namespace tandem::testing
