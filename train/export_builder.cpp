#include "train/export_builder.h"

#include <cmath>

#include "train/device_tensor.h"

namespace tandem::train {

namespace {

std::vector<int64_t> pair(const int64_t (&v)[2]) { return {v[0], v[1]}; }
std::vector<int64_t> pads(const int64_t (&v)[2]) { return {v[0], v[1], v[0], v[1]}; }

// A scalar f32 Constant node (as torch.onnx writes one): not an
// initializer, whose names are the state_dict's keys.
ValueId scalar(ExportBuilder& g, float v) {
  Attributes a;
  a.set("value", Tensor::from_vector(std::vector<float>{v}, {}));
  return g.node("Constant", {}, a);
}

// GELU before opset 20 as torch.onnx writes it,
//   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5),
// the chain tandem's importer fuses back into one Gelu (graph/fuse_gelu.cpp).
ValueId gelu_erf_nodes(ExportBuilder& g, ValueId x) {
  ValueId scaled = g.node("Div", {x, scalar(g, float(std::sqrt(2.0)))});
  ValueId one_plus = g.node("Add", {g.node("Erf", {scaled}), scalar(g, 1.f)});
  return g.node("Mul", {g.node("Mul", {x, one_plus}), scalar(g, 0.5f)});
}

}  // namespace

ValueId ExportBuilder::constant(const std::string& name, const Tensor& t) {
  check(g_.find_value(name) == kNoValue, "export: two tensors are named '" + name + "'");
  // A model trained on a GPU exports from there: initializers are host tensors.
  return g_.add_constant(name, t.device().is_cpu() ? t.clone() : to_host(t));
}

ValueId ExportBuilder::node(const std::string& op, std::vector<ValueId> inputs, Attributes attrs) {
  Node n;
  n.op_type = op;
  n.name = op + "_" + std::to_string(g_.nodes.size());
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  Value out;
  out.name = n.name + "_out";
  n.outputs.push_back(g_.add_value(std::move(out)));
  ValueId id = n.outputs[0];
  g_.add_node(std::move(n));
  return id;
}

ValueId export_op(ExportBuilder& g, ValueId x, const ops::Activation& p) {
  using K = ops::ActivationKind;
  Attributes a;
  switch (p.kind) {
    case K::none: return x;
    // x * sigmoid(x) written out: the form exporters write and importers
    // (tandem's fusion pass among them) recognise.
    case K::silu: return g.node("Mul", {x, g.node("Sigmoid", {x})});
    case K::leaky_relu:
    case K::elu: a.set("alpha", p.alpha); break;
    case K::hard_sigmoid:
      check_supported(p.gamma == 1.f, "export: HardSigmoid's upper bound is 1 in ONNX");
      a.set("alpha", p.alpha);
      a.set("beta", p.beta);
      break;
    case K::clip: throw Error::unsupported("export: Clip takes its bounds as inputs, which export does not write");
    case K::hard_swish: check_supported(p.gamma == 1.f, "export: HardSwish has no output scale in ONNX"); break;
    case K::gelu:
    case K::gelu_tanh:
      if (g.graph().opset < 20) {
        check_supported(p.kind == K::gelu, "export: Gelu approximate=tanh needs opset 20");
        return gelu_erf_nodes(g, x);
      }
      a.set("approximate", std::string(p.kind == K::gelu ? "none" : "tanh"));
      break;
    default: break;
  }
  return g.node(ops::activation_op_type(p.kind), {x}, a);
}

ValueId export_op(ExportBuilder& g, ValueId x, const ops::Pool2dParams& p) {
  Attributes a;
  a.set("kernel_shape", pair(p.kernel));
  a.set("strides", pair(p.stride));
  a.set("pads", pads(p.padding));
  if (p.kind == ops::PoolKind::max) {
    a.set("dilations", pair(p.dilation));
    return g.node("MaxPool", {x}, a);
  }
  check_supported(p.dilation[0] == 1 && p.dilation[1] == 1, "export: AveragePool has no dilation before opset 19");
  a.set("count_include_pad", int64_t(p.count_include_pad));
  return g.node("AveragePool", {x}, a);
}

}  // namespace tandem::train
