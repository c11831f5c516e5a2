// Add, Sub, Mul, Div, Max, Min, Pow with numpy broadcasting.
//   f32/bf16 with one operand of the output's full shape: oneDNN binary
//   (operands swapped for commutative ops; Sub swapped is -(B - A) through a
//   linear post-op). A 4-D full operand keeps its layout (plain, nhwc,
//   nChw8c, nChw16c) when the other is the same shape (requested in that
//   layout too) or a [1|N, 1|C, 1, 1] per-channel tensor (squeeze-excite
//   scales), so blocked activations need no reorder; Y has that layout.
//   Pow with a constant scalar f32 exponent: oneDNN eltwise_pow, layout kept.
//   Everything else (int32/int64/f64/int8 shape arithmetic, Pow, Div by a
//   broadcast numerator, more than two Max/Min operands folded pairwise):
//   a plain reference loop.
#include <optional>

#include "cpu/binary_reference.h"
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;

BinaryOp binary_op_of(const std::string& t) {
  if (t == "Add") return BinaryOp::add;
  if (t == "Sub") return BinaryOp::sub;
  if (t == "Mul") return BinaryOp::mul;
  if (t == "Div") return BinaryOp::div;
  if (t == "Max") return BinaryOp::max;
  if (t == "Min") return BinaryOp::min;
  return BinaryOp::pow;
}

Shape pad_rank(const Shape& s, size_t r) {
  Shape p(r - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

// Layout the full operand (4-D, layout `l`) and the other (padded shape `s1`)
// can share; plain when oneDNN should see both in plain order.
bool keeps_layout(Layout l, const Shape& s0, const Shape& s1) {
  if (l == Layout::plain || s0.size() != 4) return false;
  return s1 == s0 || (s1[2] == 1 && s1[3] == 1 && (s1[0] == 1 || s1[0] == s0[0]) &&
                      (s1[1] == 1 || s1[1] == s0[1]));
}

// Layout for the second operand: the full layout when shapes match; for a
// per-channel tensor whatever it arrives in (4-D, either plain or `l`).
Layout other_layout(Layout l, const TensorDesc& other, const Shape& s0, const Shape& s1) {
  if (s1 == s0) return l;
  if (other.shape.size() == 4 && other.layout == l) return l;
  return Layout::plain;
}

std::optional<KernelPlan> make_dnnl_binary(const OpDesc& op, BinaryOp bop) {
  if (op.inputs.size() != 2 || bop == BinaryOp::pow) return std::nullopt;
  const TensorDesc* a = &op.inputs[0];
  const TensorDesc* b = &op.inputs[1];
  DType t = a->dtype;
  const Shape& y = op.outputs[0].shape;
  if ((t != DType::f32 && t != DType::bf16) || b->dtype != t || shape_numel(y) == 0 || y.empty())
    return std::nullopt;
  int ia = 0, ib = 1;
  bool negate = false;
  if (pad_rank(a->shape, y.size()) != y) {
    bool commutative = bop != BinaryOp::sub && bop != BinaryOp::div;
    if (pad_rank(b->shape, y.size()) != y || !(commutative || bop == BinaryOp::sub)) return std::nullopt;
    std::swap(a, b);
    std::swap(ia, ib);
    negate = bop == BinaryOp::sub;  // A - B = -(B - A)
  }
  Shape s1 = pad_rank(b->shape, y.size());
  // Full operand's layout: its own if it is not plain, else the other's when
  // the two have one shape.
  Layout l0 = a->layout;
  if (l0 == Layout::plain && s1 == y && b->shape.size() == 4) l0 = b->layout;
  bool keep = keeps_layout(l0, y, s1);
  Layout la = keep ? l0 : Layout::plain;
  Layout lb = keep ? other_layout(l0, *b, y, s1) : Layout::plain;
  memory::desc m0 = md(t, y, la), m1 = md(t, s1, lb);
  static const dnnl::algorithm algs[] = {dnnl::algorithm::binary_add, dnnl::algorithm::binary_sub,
                                         dnnl::algorithm::binary_mul, dnnl::algorithm::binary_div,
                                         dnnl::algorithm::binary_max, dnnl::algorithm::binary_min};
  dnnl::post_ops po;
  if (negate) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, -1.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(po);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(algs[int(bop)], m0, m1, m0), attr, engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::binary(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC_0, ia, m0);
  k->bind_input(DNNL_ARG_SRC_1, ib, m1);
  k->bind_output(DNNL_ARG_DST, 0, m0);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.resize(2);
  plan.input_layouts[size_t(ia)] = la;
  plan.input_layouts[size_t(ib)] = lb;
  plan.output_layouts = {la};
  return plan;
}

// x ^ c for a constant scalar exponent c: eltwise_pow (alpha * x^beta).
std::optional<KernelPlan> make_scalar_pow(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  const Tensor* e = op.constants.size() > 1 ? op.constants[1] : nullptr;
  if (x.dtype != DType::f32 || !e || e->numel() != 1 || op.outputs[0].shape != x.shape ||
      x.shape.empty() || x.numel() == 0)
    return std::nullopt;
  memory::desc m = md(x);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_pow, m, 1.f,
                                float(e->scalar_at(0)));
  dnnl::eltwise_forward::primitive_desc pd(d, attr, engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::eltwise_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, m);
  k->bind_output(DNNL_ARG_DST, 0, m);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts = {x.layout, Layout::plain};
  plan.output_layouts = {x.layout};
  return plan;
}

KernelPlan make_binary(const OpDesc& op) {
  BinaryOp bop = binary_op_of(op.op_type);
  if (bop == BinaryOp::pow) {
    if (auto p = make_scalar_pow(op)) return std::move(*p);
  } else if (auto p = make_dnnl_binary(op, bop)) {
    return std::move(*p);
  }
  std::vector<TensorDesc> in(op.inputs.begin(), op.inputs.end());
  KernelPlan plan;
  plan.kernel = make_reference_binary(bop, in, op.outputs[0]);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

}  // namespace

void register_binary_kernels() {
  for (const char* t : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) register_kernel(t, make_binary);
}

}  // namespace tandem::cpu
