#include "tests/op_harness.h"

#include <cmath>
#include <cstring>
#include <random>

#include "cpu/cpu_backend.h"
#include "graph/op_eval.h"
#include "ops/schema.h"

namespace tandem::testing {

std::vector<Tensor> run_op(Backend& backend, const OpCall& call) {
  tandem::OpEval c;
  c.op_type = call.op_type;
  c.node = "test_" + call.op_type;
  c.attrs = &call.attrs;
  c.constant = call.constant;
  c.num_outputs = call.num_outputs;
  c.opset = call.opset;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    Tensor t = call.inputs[i];
    bool is_const = i < call.constant.size() && call.constant[i];
    if (t.defined() && !is_const && t.rank() == 4 && call.input_layout != Layout::plain)
      t = reorder_tensor(backend, t, call.input_layout);
    c.inputs.push_back(t);
  }
  return evaluate_op(backend, c);
}

Layout planned_output_layout(const std::string& op, const Attributes& attrs,
                             const std::vector<TensorDesc>& inputs, std::vector<const Tensor*> constants) {
  constants.resize(inputs.size(), nullptr);
  ops::InferContext ic;
  ic.op_type = op;
  ic.attrs = &attrs;
  ic.inputs = inputs;
  ic.present.assign(inputs.size(), true);
  ic.constants = constants;
  OpDesc d;
  d.op_type = op;
  d.attrs = &attrs;
  d.inputs = inputs;
  d.present = ic.present;
  d.constants = constants;
  d.outputs = ops::infer_outputs(ic);
  return cpu::cpu_backend().prepare(d).output_layouts.at(0);
}

std::vector<Tensor> run_op_cpu(const OpCall& call) { return run_op(cpu::cpu_backend(), call); }

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::f32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  check(a.shape() == b.shape(), "shape mismatch " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = std::fabs(a.scalar_at(i) - b.scalar_at(i));
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

double max_abs(const Tensor& a) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.scalar_at(i)));
  return m;
}

}  // namespace tandem::testing
