// Lowering a float32 graph to f16 / bf16 (graph/precision.cpp) where the
// graph itself makes floats from masks or indices, as CenterNet's
// post-processing does (a peak mask cast to float, times the heatmap).
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "tests/graph_builder.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// A Cast to float32 inside the graph casts to the low type instead, so its
// result and the low activations meet in one op with one dtype (shape
// inference refuses mixed operands); the graph's outputs stay float32.
TEST(LowerPrecision, CastsToFloat32InsideTheGraphMakeTheLowType) {
  for (DType low : {DType::f16, DType::bf16}) {
    GraphBuilder b;
    ValueId x = b.input("x", {3, 40});
    Attributes to_f32;
    to_f32.set("to", int64_t(1));
    ValueId zero = b.constant("zero", Tensor::from_vector<float>({0.f}, {}));
    ValueId mask = b.node("Cast", {b.node("Greater", {x, zero})}, to_f32);
    b.output(b.node("Mul", {x, mask}));
    b.output(mask);
    Graph g = b.g;
    lower_precision(g, low);
    ASSERT_NO_THROW(infer_and_fold(g, cpu::cpu_backend())) << dtype_name(low);
    EXPECT_EQ(g.value(mask).dtype, low);
    for (ValueId out : g.outputs) EXPECT_EQ(g.value(out).dtype, DType::f32) << g.value(out).name;
  }
}

}  // namespace
