// QuantizeLinear / DequantizeLinear refuse constant parameters no model
// could mean: a scale of zero, NaN or infinity, an int32 zero point other
// than 0 (ONNX requires 0), a per-axis scale whose length is not the
// axis's. The error names the node and the fault; valid ones run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "graph/session.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Graph quantize(const Tensor& scale, const Tensor& zero_point) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3});
  b.output(b.node("QuantizeLinear", {x, b.constant("s", scale), b.constant("z", zero_point)}));
  return b.g;
}

Graph dequantize_i32(const Tensor& zero_point) {
  GraphBuilder b;
  ValueId x = b.input("x", {3}, DType::i32);
  b.output(b.node("DequantizeLinear", {x, b.constant("s", Tensor::from_vector<float>({0.5f}, {})),
                                       b.constant("z", zero_point)}));
  return b.g;
}

// The message of the Error running `g` throws, or "" when it runs.
std::string error_of(Graph g, const Tensor& x) {
  try {
    Session s(std::move(g));
    s.run({x});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(QuantizeParams, BadConstantsAreRefusedNamingTheNode) {
  const Tensor x = random_tensor({2, 3}, 1);
  const Tensor zp = Tensor::from_vector<uint8_t>({128}, {});
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.f, nan, inf, -inf}) {
    const std::string e = error_of(quantize(Tensor::from_vector<float>({bad}, {}), zp), x);
    EXPECT_NE(e.find("QuantizeLinear"), std::string::npos) << e;
    EXPECT_NE(e.find("finite and non-zero"), std::string::npos) << e;
  }
  const std::string per_axis = error_of(quantize(Tensor::from_vector<float>({0.1f, 0.2f}, {2}),
                                                 Tensor::from_vector<uint8_t>({1, 2}, {2})),
                                        x);
  EXPECT_NE(per_axis.find("per-axis scale of 2 values"), std::string::npos) << per_axis;
  const Tensor xi = Tensor::from_vector<int32_t>({1, -2, 3}, {3});
  const std::string zero = error_of(dequantize_i32(Tensor::from_vector<int32_t>({4}, {})), xi);
  EXPECT_NE(zero.find("int32 zero point must be 0"), std::string::npos) << zero;
  EXPECT_EQ(error_of(quantize(Tensor::from_vector<float>({0.02f}, {}), zp), x), "");
  EXPECT_EQ(error_of(dequantize_i32(Tensor::from_vector<int32_t>({0}, {})), xi), "");
}
