// BatchNormalization (inference) on the CPU backend vs the ONNX formula in
// float64: y = (x - mean) / sqrt(var + eps) * scale + B, per channel, for
// 2-D to 5-D inputs in plain, nChw16c and nhwc layouts, constant and computed
// statistics. Tolerance: 1e-5 * max|ref|.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_backend.h"
#include "ops/schema.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor reference_batchnorm(const Tensor& x, const Tensor& scale, const Tensor& b, const Tensor& mean,
                           const Tensor& var, double eps) {
  Tensor y = Tensor::empty(DType::f32, x.shape());
  int64_t c = x.shape()[1], inner = x.numel() / (x.shape()[0] * c);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t ch = (i / inner) % c;
    double v = (x.scalar_at(i) - mean.scalar_at(ch)) / std::sqrt(var.scalar_at(ch) + eps);
    y.data<float>()[i] = float(v * scale.scalar_at(ch) + b.scalar_at(ch));
  }
  return y;
}

OpCall make_call(std::vector<Tensor> inputs, std::vector<bool> constant, float eps) {
  OpCall c;
  c.op_type = "BatchNormalization";
  c.attrs.set("epsilon", eps);
  c.inputs = std::move(inputs);
  c.constant = std::move(constant);
  return c;
}

}  // namespace

TEST(CpuBatchNorm, MatchesOnnxFormula) {
  std::vector<Shape> shapes = {{2, 20, 5, 6}, {1, 64, 7, 7}, {3, 10}, {2, 6, 11}, {1, 4, 3, 2, 5}};
  uint64_t seed = 60;
  for (const Shape& s : shapes)
    for (bool constant : {true, false}) {
      int64_t c = s[1];
      Tensor x = random_tensor(s, seed += 5, -3.f, 3.f);
      Tensor scale = random_tensor({c}, seed + 1), b = random_tensor({c}, seed + 2);
      Tensor mean = random_tensor({c}, seed + 3), var = random_tensor({c}, seed + 4, 0.1f, 2.f);
      float eps = 1e-3f;
      Tensor ref = reference_batchnorm(x, scale, b, mean, var, eps);
      std::vector<Layout> layouts{Layout::plain};
      if (s.size() == 4) layouts = {Layout::plain, Layout::blocked16, Layout::nhwc};
      for (Layout l : layouts) {
        OpCall call = make_call({x, scale, b, mean, var}, {false, constant, constant, constant, constant}, eps);
        call.input_layout = l;
        Tensor y = run_op_cpu(call)[0];
        std::string what = "x" + shape_str(s) + " layout " + std::string(layout_name(l)) +
                           (constant ? " constant" : " computed") + " statistics";
        ASSERT_EQ(y.shape(), s) << what;
        EXPECT_LE(max_abs_diff(y, ref), 1e-5 * max_abs(ref)) << what;
      }
    }
}

TEST(CpuBatchNorm, KeepsTheInputLayoutAndRejectsTraining) {
  Tensor p = random_tensor({32}, 1);
  Attributes a;
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::nhwc}) {
    ops::InferContext ic;
    ic.op_type = "BatchNormalization";
    ic.attrs = &a;
    ic.inputs = {TensorDesc{DType::f32, {1, 32, 8, 8}, l}, p.desc(), p.desc(), p.desc(), p.desc()};
    ic.present.assign(5, true);
    ic.constants = {nullptr, &p, &p, &p, &p};
    OpDesc d;
    d.op_type = ic.op_type;
    d.attrs = &a;
    d.inputs = ic.inputs;
    d.present = ic.present;
    d.constants = ic.constants;
    d.outputs = ops::infer_outputs(ic);
    EXPECT_EQ(cpu::cpu_backend().prepare(d).output_layouts.at(0), l) << layout_name(l);
  }
  Tensor x = random_tensor({1, 32, 4, 4}, 2);
  OpCall training = make_call({x, p, p, p, p}, {false, true, true, true, true}, 1e-5f);
  training.attrs.set("training_mode", int64_t(1));
  EXPECT_THROW(run_op_cpu(training), Error);
  OpCall stats = make_call({x, p, p, p, p}, {false, true, true, true, true}, 1e-5f);
  stats.num_outputs = 3;
  EXPECT_THROW(run_op_cpu(stats), Error);
}
