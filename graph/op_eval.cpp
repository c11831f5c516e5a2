#include "graph/op_eval.h"

#include <cstring>

#include "ops/schema.h"

namespace tandem {

namespace {

void run_kernel(Kernel& k, const std::vector<const void*>& in, const std::vector<void*>& out) {
  std::vector<char> scratch(k.scratch_bytes() + kHostAlignment);
  k.run(in.data(), out.data(), RunContext{scratch.data(), scratch.size()});
}

OpDesc describe(const OpEval& call, const std::vector<Tensor>& inputs, const Attributes& attrs) {
  ops::InferContext ic;
  ic.op_type = call.op_type;
  ic.node = call.node.empty() ? call.op_type : call.node;
  ic.attrs = &attrs;
  ic.opset = call.opset;
  ic.num_outputs = call.num_outputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool present = inputs[i].defined();
    bool is_const = i < call.constant.size() && call.constant[i];
    ic.inputs.push_back(present ? inputs[i].desc() : TensorDesc{});
    ic.present.push_back(present);
    ic.constants.push_back(present && is_const ? &inputs[i] : nullptr);
  }
  OpDesc d;
  d.outputs = ops::infer_outputs(ic);
  d.op_type = ic.op_type;
  d.node = ic.node;
  d.attrs = &attrs;
  d.opset = ic.opset;
  d.inputs = ic.inputs;
  d.present = ic.present;
  d.constants = ic.constants;
  return d;
}

}  // namespace

KernelPlan prepare_reorder(Backend& backend, const TensorDesc& from, Layout to) {
  Attributes a;
  a.set("to_layout", int64_t(to));
  OpDesc d;
  d.op_type = kReorderOp;
  d.node = "reorder";
  d.attrs = &a;
  d.inputs = {from};
  d.present = {true};
  d.constants = {nullptr};
  TensorDesc out = from;
  out.layout = to;
  d.outputs = {out};
  return backend.prepare(d);
}

Tensor reorder_tensor(Backend& backend, const Tensor& t, Layout to) {
  if (t.layout() == to) return t;
  KernelPlan p = prepare_reorder(backend, t.desc(), to);
  TensorDesc out = t.desc();
  out.layout = to;
  Tensor result = Tensor::empty(out);
  run_kernel(*p.kernel, {t.raw()}, {result.raw()});
  backend.synchronize();
  return result;
}

std::vector<Tensor> evaluate_op(Backend& backend, const OpEval& call) {
  static const Attributes kNone;
  const Attributes& attrs = call.attrs ? *call.attrs : kNone;
  std::vector<Tensor> inputs = call.inputs;
  OpDesc d = describe(call, inputs, attrs);
  KernelPlan plan = backend.prepare(d);

  std::vector<const void*> in_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (plan.input_layouts[i] != inputs[i].layout())
      inputs[i] = reorder_tensor(backend, inputs[i], plan.input_layouts[i]);
    in_ptrs[i] = inputs[i].raw();
  }
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < d.outputs.size(); ++i) {
    TensorDesc od = d.outputs[i];
    od.layout = plan.output_layouts[i];
    if (i == 0 && plan.alias_input >= 0) {
      const Tensor& src = inputs[size_t(plan.alias_input)];
      outs.push_back(Tensor(od, src.storage(), src.offset()));
    } else {
      outs.push_back(Tensor::empty(od));
      // Poison floats so an element the kernel forgot shows up as NaN.
      if (od.dtype == DType::f32) std::memset(outs.back().raw(), 0xff, outs.back().bytes());
    }
    out_ptrs.push_back(outs.back().raw());
  }
  if (plan.kernel) run_kernel(*plan.kernel, in_ptrs, out_ptrs);
  backend.synchronize();
  for (Tensor& o : outs) o = reorder_tensor(backend, o, Layout::plain);
  return outs;
}

}  // namespace tandem
