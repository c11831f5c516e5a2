// The CUDA training table's activations against the CUDA inference graphs
// of the same activation (tests/activation_identity.h), in f32, f16 and
// bf16: identical bits, so a model trained on the GPU runs its exported
// forward exactly as it trained (fp16/bf16 sessions lower the graph to the
// 16-bit type, inputs and outputs staying f32; the conversions both sides
// make are exact).
#include <gtest/gtest.h>

#include "tests/activation_identity.h"
#include "train_test_util.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor train_forward(const ops::Activation& a, const Tensor& x, DType dtype) {
  const TrainBackend& g = gpu_table();
  Tensor xd = up(dtype == DType::f32 ? x : to_low(x, dtype));
  Tensor y = g.empty(g.ctx, dtype, x.shape());
  g.eltwise_forward(g.ctx, a, xd, y);
  return dtype == DType::f32 ? down(y) : to_f32(down(y));
}

Tensor infer(const Graph& graph, const Tensor& x, Precision p) {
  SessionOptions o;
  o.device = Device::cuda(0);
  o.precision = p;
  o.strict_device = true;
  return Session(graph, o).run({x})[0];
}

}  // namespace

TEST(CudaActivationIdentity, TrainingForwardIsTheInferenceForward) {
  TANDEM_REQUIRE_GPU();
  const Shape shape{2, 8, 5, 7};
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    // Values the 16-bit type holds exactly, so both sides start from the same input.
    Tensor x = random_for(p, shape, 17, -6.f, 6.f);
    int compared = 0;
    for (const ActivationCase& c : trainable_activations()) {
      Tensor trained = train_forward(c.act, x, storage_dtype(p));
      for (const auto& [form, graph] : inference_graphs(c.act, shape)) {
        expect_identical(infer(graph, x, p), trained,
                         c.what + ", " + form + ", " + precision_name(p));
        ++compared;
      }
    }
    EXPECT_EQ(compared, 13);  // 8 kinds: 7 standalone ops (not SiLU), 6 fused forms (not GELU)
  }
}
