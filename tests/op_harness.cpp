#include "tests/op_harness.h"

#include <cmath>
#include <cstring>
#include <random>

#include "cpu/cpu_backend.h"
#include "ops/schema.h"

namespace tandem::testing {

namespace {

// Runs a tandem.Reorder on `backend` from t's layout to `to`.
Tensor reorder(Backend& backend, const Tensor& t, Layout to) {
  if (t.layout() == to) return t;
  Attributes a;
  a.set("to_layout", int64_t(to));
  OpDesc d;
  d.op_type = kReorderOp;
  d.node = "reorder";
  d.attrs = &a;
  d.inputs = {t.desc()};
  d.present = {true};
  d.constants = {nullptr};
  TensorDesc out = t.desc();
  out.layout = to;
  d.outputs = {out};
  KernelPlan p = backend.prepare(d);
  Tensor result = Tensor::empty(out);
  std::vector<char> scratch(p.kernel->scratch_bytes() + 64);
  const void* in[] = {t.raw()};
  void* o[] = {result.raw()};
  p.kernel->run(in, o, RunContext{scratch.data(), scratch.size()});
  backend.synchronize();
  return result;
}

}  // namespace

std::vector<Tensor> run_op(Backend& backend, const OpCall& call) {
  ops::InferContext ic;
  ic.op_type = call.op_type;
  ic.node = "test_" + call.op_type;
  ic.attrs = &call.attrs;
  ic.opset = call.opset;
  ic.num_outputs = call.num_outputs;
  std::vector<Tensor> inputs = call.inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool present = inputs[i].defined();
    bool is_const = i < call.constant.size() && call.constant[i];
    if (present && !is_const && inputs[i].rank() == 4 && call.input_layout != Layout::plain)
      inputs[i] = reorder(backend, inputs[i], call.input_layout);
    ic.inputs.push_back(present ? inputs[i].desc() : TensorDesc{});
    ic.present.push_back(present);
    ic.constants.push_back(present && is_const ? &call.inputs[i] : nullptr);
  }
  std::vector<TensorDesc> out_descs = ops::infer_outputs(ic);

  OpDesc d;
  d.op_type = ic.op_type;
  d.node = ic.node;
  d.attrs = &call.attrs;
  d.opset = call.opset;
  d.inputs = ic.inputs;
  d.present = ic.present;
  d.constants = ic.constants;
  d.outputs = out_descs;
  KernelPlan plan = backend.prepare(d);

  std::vector<const void*> in_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (plan.input_layouts[i] != inputs[i].layout())
      inputs[i] = reorder(backend, inputs[i], plan.input_layouts[i]);
    in_ptrs[i] = inputs[i].raw();
  }
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < out_descs.size(); ++i) {
    TensorDesc od = out_descs[i];
    od.layout = plan.output_layouts[i];
    if (i == 0 && plan.alias_input >= 0) {
      const Tensor& src = inputs[size_t(plan.alias_input)];
      outs.push_back(Tensor(od, src.storage(), src.offset()));
    } else {
      outs.push_back(Tensor::empty(od));
      // Poison so an unwritten element shows up as NaN.
      if (od.dtype == DType::f32) std::memset(outs.back().raw(), 0xff, outs.back().bytes());
    }
    out_ptrs.push_back(outs.back().raw());
  }
  if (plan.kernel) {
    std::vector<char> scratch(plan.kernel->scratch_bytes() + 64);
    plan.kernel->run(in_ptrs.data(), out_ptrs.data(), RunContext{scratch.data(), scratch.size()});
  }
  backend.synchronize();
  for (Tensor& o : outs) o = reorder(backend, o, Layout::plain);
  return outs;
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
