// Executor, folding and memory planning on hand-built graphs; values checked
// against float64 formulas.
#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "graph/session.h"
#include "tests/cpu_features.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

TEST(Session, RunsChainWithConstantBoundsAndDynamicBatch) {
  GraphBuilder b;
  ValueId x = b.input("x", {-1, 4});
  ValueId lo = b.constant("lo", Tensor::from_vector<float>({-0.5f}, {}));
  ValueId hi = b.constant("hi", Tensor::from_vector<float>({0.25f}, {}));
  ValueId y = b.node("Clip", {b.node("Tanh", {x}), lo, hi});
  b.output(b.node("Identity", {y}));
  Session s(b.g);
  for (int64_t batch : {1, 3}) {
    Tensor in = random_tensor({batch, 4}, 11 + batch, -3.f, 3.f);
    Tensor out = s.run({in})[0];
    ASSERT_EQ(out.shape(), (Shape{batch, 4}));
    for (int64_t i = 0; i < in.numel(); ++i)
      EXPECT_NEAR(out.scalar_at(i), std::clamp(std::tanh(in.scalar_at(i)), -0.5, 0.25), 1e-6);
  }
}

TEST(Session, MemoryPlannerReusesBuffers) {
  // A chain of 12 activations needs two live buffers at a time, not 12.
  GraphBuilder b;
  ValueId v = b.input("x", {2, 16, 8, 8});
  for (int i = 0; i < 12; ++i) v = b.node(i % 2 ? "Relu" : "Sigmoid", {v});
  b.output(v);
  Session s(b.g);
  Tensor in = random_tensor({2, 16, 8, 8}, 5);
  Tensor out = s.run({in})[0];
  const PlanStats& st = s.last_compile().plan;
  size_t one = size_t(2 * 16 * 8 * 8 * 4);
  EXPECT_EQ(st.unplanned_bytes, 12 * one);
  EXPECT_LE(st.arena_bytes, 2 * one);
  double ref0 = in.scalar_at(0);
  for (int i = 0; i < 12; ++i) ref0 = i % 2 ? std::max(ref0, 0.0) : 1 / (1 + std::exp(-ref0));
  EXPECT_NEAR(out.scalar_at(0), ref0, 1e-6);
}

TEST(Session, RejectsWrongInputShape) {
  GraphBuilder b;
  b.output(b.node("Relu", {b.input("x", {-1, 4})}));
  Session s(b.g);
  EXPECT_THROW(s.run({random_tensor({2, 5}, 1)}), Error);
  EXPECT_THROW(s.run(std::vector<Tensor>{}), Error);
}

// An op no backend has fails when the session opens (before any input is
// read), naming the node.
TEST(Session, UnsupportedOpNamesTheNode) {
  GraphBuilder b;
  b.output(b.node("NoSuchOp", {b.input("x", {1, 4})}));
  try {
    Session s(b.g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchOp_0"), std::string::npos) << e.what();
  }
}

// Conv + residual Add fuses into one conv; the residual is accumulated in
// place when the conv is its last reader, and read from its own buffer when
// a later node still needs it. Reference: the same graph run unfused.
TEST(Session, FusedResidualInPlaceOnlyWhenResidualIsDead) {
  for (bool residual_read_later : {false, true}) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 16, 9, 9});
    Attributes pads;
    pads.set("pads", Shape{1, 1, 1, 1});
    ValueId w1 = b.constant("w1", random_tensor({16, 16, 3, 3}, 21, -0.2f, 0.2f));
    ValueId w2 = b.constant("w2", random_tensor({16, 16, 3, 3}, 22, -0.2f, 0.2f));
    ValueId a = b.node("Conv", {x, w1}, pads);
    ValueId h = b.node("Conv", {a, w2}, pads);
    ValueId c = b.node("Relu", {b.node("Add", {b.node("Conv", {h, w1}, pads), a})});
    b.output(c);
    if (residual_read_later) b.output(b.node("Sigmoid", {a}));
    Tensor in = random_tensor({2, 16, 9, 9}, 23);
    SessionOptions unfused;
    unfused.optimize = false;
    std::vector<Tensor> want = Session(b.g, unfused).run({in});
    Session fused(b.g);
    std::vector<Tensor> got = fused.run({in});
    EXPECT_EQ(fused.last_compile().epilogues_fused, 3);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(max_abs_diff(got[i], want[i]), 1e-5 * max_abs(want[i])) << "output " << i << ", read later "
                                                                        << residual_read_later;
  }
}

// A one-element input is specialized into a plan constant; lowering the graph
// to bf16 must still take it as the f32 the caller feeds (it once became a
// bf16 input and every run was refused).
TEST(Session, Bf16PrecisionTakesScalarInputsAsF32) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3});
  ValueId s = b.input("s", {1});
  b.output(b.node("Add", {x, s}));
  SessionOptions o;
  o.precision = Precision::bf16;
  Session session(b.g, o);
  Tensor in = random_tensor({2, 3}, 7, -3.f, 3.f), scalar = Tensor::from_vector<float>({1.3f}, {1});
  Tensor out = session.run(std::vector<Tensor>{in, scalar})[0];
  ASSERT_EQ(out.desc(), in.desc());
  // Three roundings to 8 significant bits (x, s, the sum), each <= |v| * 2^-9.
  for (int64_t i = 0; i < in.numel(); ++i) EXPECT_NEAR(out.scalar_at(i), in.scalar_at(i) + 1.3, 0.03);
}

// A Gemm whose result is a graph output (a classifier's head) stays float32
// under bf16: only its activation input is rounded (by the graph's cast
// down at the input), its weights and bias are not, so it matches a float32
// Gemm on the rounded input far closer than bf16 weights could (2^-9).
TEST(Session, LowPrecisionKeepsTheOutputGemmInFloat32) {
  GraphBuilder b;
  ValueId x = b.input("x", {4, 64});
  Tensor w = random_tensor({64, 10}, 31, -1.f, 1.f), bias = random_tensor({10}, 32, -1.f, 1.f);
  b.output(b.node("Gemm", {x, b.constant("w", w), b.constant("b", bias)}));
  SessionOptions o;
  o.precision = Precision::bf16;
  Tensor in = random_tensor({4, 64}, 33, -2.f, 2.f);
  Tensor got = Session(b.g, o).run({in})[0];
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 10; ++c) {
      double want = bias.data<float>()[c], scale = 0;
      for (int64_t k = 0; k < 64; ++k) {
        double xr = bf16_to_float(float_to_bf16(in.data<float>()[r * 64 + k]));
        want += xr * w.data<float>()[k * 10 + c];
        scale += std::fabs(xr * w.data<float>()[k * 10 + c]);
      }
      EXPECT_NEAR(got.data<float>()[r * 10 + c], want, 1e-5 * scale) << r << "," << c;
    }
}

// The op mix of the shipped detector's upsampling head (convolution in a
// blocked layout, bilinear upsampling kept in that layout, an unfused Relu,
// a squeeze-excite mean over H and W, a broadcast product) runs in bf16 on
// the CPU and agrees with float64 arithmetic within bf16's rounding; each of
// these kernels once refused bf16, so `--precision bf16` failed on the CPU.
TEST(Session, Bf16RunsTheDetectorsUpsamplingHeadOnTheCpu) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  const int64_t N = 2, C = 32, H = 6, W = 5, OH = 2 * H, OW = 2 * W;
  GraphBuilder b;
  ValueId x = b.input("x", {N, C, H, W});
  Tensor w = random_tensor({C, C, 3, 3}, 41, -0.2f, 0.2f);
  Attributes conv;
  conv.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ValueId c = b.node("Conv", {x, b.constant("w", w)}, conv);
  Attributes linear;
  linear.set("mode", std::string("linear"));
  linear.set("coordinate_transformation_mode", std::string("half_pixel"));
  ValueId roi = b.constant("roi", Tensor::from_vector<float>({}, {0}));
  ValueId scales = b.constant("scales", Tensor::from_vector<float>({1.f, 1.f, 2.f, 2.f}, {4}));
  ValueId a = b.node("Relu", {b.node("Resize", {c, roi, scales}, linear)});
  Attributes hw;
  hw.set("axes", std::vector<int64_t>{2, 3});
  hw.set("keepdims", int64_t(1));
  b.output(b.node("Mul", {a, b.node("ReduceMean", {a}, hw)}));
  SessionOptions o;
  o.device = Device::cpu();
  o.precision = Precision::bf16;
  Tensor in = random_tensor({N, C, H, W}, 42, -1.f, 1.f);
  Tensor got = Session(b.g, o).run({in})[0];
  ASSERT_EQ(got.shape(), (Shape{N, C, OH, OW}));

  auto X = [&](int64_t n, int64_t ch, int64_t y, int64_t x_) { return double(in.data<float>()[((n * C + ch) * H + y) * W + x_]); };
  std::vector<double> conv_out(size_t(N * C * H * W)), up(size_t(N * C * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < C; ++oc)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x_ = 0; x_ < W; ++x_) {
          double s = 0;
          for (int64_t ic = 0; ic < C; ++ic)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t iy = y + ky - 1, ix = x_ + kx - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += X(n, ic, iy, ix) * w.data<float>()[((oc * C + ic) * 3 + ky) * 3 + kx];
              }
          conv_out[size_t(((n * C + oc) * H + y) * W + x_)] = s;
        }
  // ONNX's half_pixel linear: source coordinate (d + 0.5) / 2 - 0.5, clamped
  // to the edge samples.
  auto taps = [](int64_t d, int64_t len, int64_t* i0, int64_t* i1, double* f) {
    double s = std::clamp((double(d) + 0.5) / 2.0 - 0.5, 0.0, double(len - 1));
    *i0 = int64_t(std::floor(s));
    *i1 = std::min(*i0 + 1, len - 1);
    *f = s - double(*i0);
  };
  std::vector<double> mean(size_t(N * C), 0.0);
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t y = 0; y < OH; ++y)
      for (int64_t x_ = 0; x_ < OW; ++x_) {
        int64_t y0, y1, x0, x1;
        double fy, fx;
        taps(y, H, &y0, &y1, &fy);
        taps(x_, W, &x0, &x1, &fx);
        auto at = [&](int64_t yy, int64_t xx) { return conv_out[size_t((nc * H + yy) * W + xx)]; };
        double v = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
        up[size_t((nc * OH + y) * OW + x_)] = std::max(v, 0.0);
        mean[size_t(nc)] += std::max(v, 0.0) / double(OH * OW);
      }
  double peak = 0;
  for (int64_t i = 0; i < got.numel(); ++i) peak = std::max(peak, std::fabs(up[size_t(i)] * mean[size_t(i / (OH * OW))]));
  // bf16 keeps 8 significant bits: each of the six roundings on the way
  // (inputs, weights, convolution, upsampling, mean, product) is within
  // 2^-9 of its value.
  for (int64_t i = 0; i < got.numel(); ++i) {
    double want = up[size_t(i)] * mean[size_t(i / (OH * OW))];
    EXPECT_NEAR(got.scalar_at(i), want, 0.02 * peak) << i;
  }
}
