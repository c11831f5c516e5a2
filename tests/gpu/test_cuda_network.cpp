// A small classifier end to end (--precision fp16 / bf16 on the GPU, as the
// CLI runs it): RGB stem conv (packed to 8 channels) + Relu, MaxPool, a conv
// with a residual Add + Relu (one FusedConv), GlobalAveragePool, Flatten,
// Gemm, Softmax. The GPU graph is lowered to the half type; the CPU runs it
// in f32 on the same rounded weights and inputs. Logits and probabilities
// within 1e-2 of the CPU's norm (bf16 keeps 8 bits of mantissa: 4e-3 a rounding,
// a few of them in a row).
#include <cstdlib>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

Attributes conv3x3() {
  Attributes a;
  a.set("kernel_shape", Shape{3, 3});
  a.set("strides", Shape{1, 1});
  a.set("pads", Shape{1, 1, 1, 1});
  return a;
}

Graph small_classifier(Precision p) {
  GraphBuilder b;
  ValueId x = b.input("x", {4, 3, 32, 32});
  ValueId w1 = b.constant("w1", random_for(p, {16, 3, 3, 3}, 1, -0.4f, 0.4f));
  ValueId b1 = b.constant("b1", random_for(p, {16}, 2, -0.2f, 0.2f));
  ValueId y = b.node("Relu", {b.node("Conv", {x, w1, b1}, conv3x3())});
  Attributes pool;
  pool.set("kernel_shape", Shape{2, 2});
  pool.set("strides", Shape{2, 2});
  y = b.node("MaxPool", {y}, pool);
  ValueId w2 = b.constant("w2", random_for(p, {16, 16, 3, 3}, 3, -0.15f, 0.15f));
  ValueId b2 = b.constant("b2", random_for(p, {16}, 4, -0.2f, 0.2f));
  y = b.node("Relu", {b.node("Add", {b.node("Conv", {y, w2, b2}, conv3x3()), y})});
  y = b.node("Flatten", {b.node("GlobalAveragePool", {y})});
  // Logits of order 1: softmax turns an absolute logit error into a relative
  // probability error, and bf16 rounds a logit of 5 by up to 0.016.
  ValueId w3 = b.constant("w3", random_for(p, {10, 16}, 5, -0.1f, 0.1f));
  ValueId b3 = b.constant("b3", random_for(p, {10}, 6, -0.2f, 0.2f));
  Attributes gemm;
  gemm.set("transB", int64_t(1));
  ValueId logits = b.node("Gemm", {y, w3, b3}, gemm);
  b.output(logits);
  b.output(b.node("Softmax", {logits}));
  return b.g;
}

TEST(CudaNetwork, SmallClassifierInHalfPrecisionMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  for (Precision p : {Precision::fp16, Precision::bf16}) {
    Graph g = small_classifier(p);
    auto [cpu, gpu] = run_both(g, {random_for(p, {4, 3, 32, 32}, 7)}, p);
    ASSERT_EQ(gpu.size(), 2u) << precision_name(p);
    ASSERT_EQ(gpu[0].dtype(), DType::f32) << precision_name(p);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << "logits " << precision_name(p);
    EXPECT_LE(relative_error(gpu[1], cpu[1]), tolerance(p)) << "softmax " << precision_name(p);
  }
}

// The plain cuBLASLt kernels compute-sanitizer runs `tag` on give the CPU's
// product too, with nothing left to the CPU (a Gemm with bias and Relu, of
// FaceRes's first layer's shape: FusedGemm, cuBLASLt's epilogue), and a
// misspelt choice is an Error naming the variable.
TEST(CudaGemm, PlainKernelsMatchTheCpu) {
  TANDEM_REQUIRE_GPU();
  struct Restore {
    ~Restore() { unsetenv("TANDEM_CUBLASLT_KERNELS"); }
  } restore;
  setenv("TANDEM_CUBLASLT_KERNELS", "plain", 1);
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 1024});
    ValueId y = b.node("Gemm", {x, b.constant("w", random_for(p, {1024, 256}, 11, -0.05f, 0.05f)),
                                b.constant("c", random_for(p, {256}, 12, -0.2f, 0.2f))});
    b.output(b.node("Relu", {y}));
    auto [cpu, gpu] = run_both(b.g, {random_for(p, {8, 1024}, 13)}, p, /*strict=*/true);
    ASSERT_EQ(gpu.size(), 1u);
    EXPECT_LE(relative_error(gpu[0], cpu[0]), tolerance(p)) << precision_name(p);
  }
  setenv("TANDEM_CUBLASLT_KERNELS", "tensor", 1);
  GraphBuilder b;
  ValueId x = b.input("x", {4, 8});
  b.output(b.node("MatMul", {x, b.constant("w", random_f32({8, 4}, 14))}));
  SessionOptions o;
  o.device = Device::cuda(0);
  o.strict_device = true;
  try {
    Session(b.g, o).run({random_f32({4, 8}, 15)});
    FAIL() << "an unknown TANDEM_CUBLASLT_KERNELS was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TANDEM_CUBLASLT_KERNELS=tensor"), std::string::npos)
        << e.what();
  }
}

// A device index past the last GPU is an Error naming it, not a crash.
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
