// The CPU training table's activations against the CPU inference graphs of
// the same activation (tests/activation_identity.h): identical bits, so a
// model trained here runs its exported forward exactly as it trained.
#include <gtest/gtest.h>

#include "graph/session.h"
#include "ops/train_backend.h"
#include "tests/activation_identity.h"
#include "tests/op_harness.h"
#include "tests/tensor_compare.h"
#include "train/backend.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// Past every kink and bound the kinds have (hardswish's +-3, GELU's tails).
Tensor input(const Shape& s) { return random_tensor(s, 17, -6.f, 6.f); }

Tensor train_forward(const ops::Activation& a, const Tensor& x) {
  const TrainBackend& be = train::train_backend(Device::cpu());
  Tensor y = be.empty(be.ctx, DType::f32, x.shape());
  be.eltwise_forward(be.ctx, a, x, y);
  return y;
}

}  // namespace

TEST(ActivationIdentity, CpuTrainingForwardIsTheInferenceForward) {
  const Shape shape{2, 8, 5, 7};
  Tensor x = input(shape);
  int compared = 0;
  for (const ActivationCase& c : trainable_activations()) {
    Tensor trained = train_forward(c.act, x);
    for (const auto& [form, graph] : inference_graphs(c.act, shape)) {
      expect_identical(Session(graph, SessionOptions{}).run({x})[0], trained, c.what + ", " + form);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 13);  // 8 kinds: 7 standalone ops (not SiLU), 6 fused forms (not GELU)
}
