// CUDA unary ops and layout reorders vs the CPU backend, fp32: relative
// error <= 1e-5 of the reference norm (the bound of every fp32 GPU op); fp16 and bf16
// (the GPU graph lowered, the CPU one in f32 on the same rounded inputs):
// <= 1e-2.
#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

struct UnaryCase {
  const char* op;
  Attributes attrs;
  float lo, hi;
};

std::vector<UnaryCase> unary_cases() {
  Attributes leaky, hs, gelu_tanh;
  leaky.set("alpha", 0.1f);
  gelu_tanh.set("approximate", std::string("tanh"));
  hs.set("alpha", 0.25f);
  hs.set("beta", 0.4f);
  return {{"Relu", {}, -2, 2},      {"Sigmoid", {}, -6, 6},    {"Tanh", {}, -3, 3},
          {"HardSwish", {}, -5, 5}, {"HardSigmoid", hs, -5, 5}, {"LeakyRelu", leaky, -2, 2},
          {"Elu", {}, -2, 2},       {"Exp", {}, -3, 3},        {"Log", {}, 0.1f, 4},
          {"Sqrt", {}, 0, 4},       {"Neg", {}, -2, 2},        {"Abs", {}, -2, 2},
          {"Floor", {}, -3, 3},     {"Ceil", {}, -3, 3},       {"Reciprocal", {}, 0.5f, 3},
          {"Softplus", {}, -5, 25}, {"Erf", {}, -3, 3},      {"Gelu", {}, -5, 5},
          {"Gelu", gelu_tanh, -5, 5}};
}

void expect_unary_ops_match(Precision p) {
  uint32_t seed = 1;
  for (const UnaryCase& c : unary_cases()) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 17, 33});
    b.output(b.node(c.op, {x}, c.attrs));
    Tensor in = random_for(p, {2, 3, 17, 33}, seed++, c.lo, c.hi);
    auto [cpu, gpu] = run_both(b.g, {in}, p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << c.op << " " << precision_name(p);
  }
}

TEST(CudaEltwise, EveryUnaryOpMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  expect_unary_ops_match(Precision::fp32);
}

TEST(CudaEltwise, EveryUnaryOpInHalfPrecisionMatchesTheCpuToOnePercent) {
  TANDEM_REQUIRE_GPU();
  expect_unary_ops_match(Precision::fp16);
  expect_unary_ops_match(Precision::bf16);
}

TEST(CudaEltwise, ClipTakesConstantBounds) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1000});
  ValueId lo = b.constant("lo", Tensor::from_vector<float>({-0.5f}, {}));
  ValueId hi = b.constant("hi", Tensor::from_vector<float>({0.75f}, {}));
  b.output(b.node("Clip", {x, lo, hi}));
  auto [cpu, gpu] = run_both(b.g, {random_f32({1000}, 7)});
  EXPECT_LE(relative_error(gpu[0], cpu[0]), 1e-6);
}

// A plain-layout elementwise op on an odd-sized 4-D tensor: exact.
TEST(CudaEltwise, OddShapesAreExact) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {3, 37, 19, 23});
  b.output(b.node("Relu", {x}));
  Tensor in = random_f32({3, 37, 19, 23}, 11);
  auto [cpu, gpu] = run_both(b.g, {in});
  EXPECT_EQ(relative_error(gpu[0], cpu[0]), 0.0);
}

TEST(CudaDevice, AbsentGpuIsAClearError) {
  int n = cuda::device_count();
  GraphBuilder b;
  ValueId x = b.input("x", {4});
  b.output(b.node("Relu", {x}));
  SessionOptions o;
  o.device = Device::cuda(n);  // one past the last
  try {
    Session(b.g, o).run({random_f32({4}, 1)});
    FAIL() << "ran on a GPU that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not present"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::testing
