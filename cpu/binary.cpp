// Add, Sub, Mul, Div, Max, Min, Pow with numpy broadcasting; training's add
// and its backward (sum_to) follow.
//   f32/bf16 with one operand of the output's full shape: oneDNN binary
//   (operands swapped for commutative ops; Sub swapped is -(B - A) through a
//   linear post-op). A 4-D full operand keeps its layout (plain, nhwc,
//   nChw8c, nChw16c) when the other is the same shape or a [1|N, 1|C, 1, 1]
//   per-channel tensor (squeeze-excite scales, folded scale/bias constants):
//   a 4-D other operand is requested in that layout too, a constant one is
//   reordered into it at prepare. Y has that layout. oneDNN runs a slow
//   reference kernel for a blocked operand next to a plain one, hence this.
//   Pow with a constant scalar f32 exponent: oneDNN eltwise_pow, layout kept.
//   Everything else (int32/int64/f64/int8 shape arithmetic, Pow, Div by a
//   broadcast numerator, more than two Max/Min operands folded pairwise, f32
//   broadcasts oneDNN has only a reference kernel for): a plain loop.
#include <optional>

#include "cpu/binary_reference.h"
#include "cpu/dnnl_utils.h"
#include "cpu/eltwise.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"

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

// Whether a 4-D full operand in layout `l` can keep it with the other operand
// (padded shape `s1`): same shape, or [1|N, 1|C, 1, 1]. oneDNN has no JIT
// kernel for division (or negative powers) over the zero padding of a
// partial channel block, so those keep a blocked layout only for full blocks.
bool keeps_layout(Layout l, const Shape& s0, const Shape& s1, bool pads_unsafe) {
  if (l == Layout::plain || s0.size() != 4) return false;
  if (pads_unsafe && s0[1] % layout_block(l) != 0) return false;
  return s1 == s0 || (s1[2] == 1 && s1[3] == 1 && (s1[0] == 1 || s1[0] == s0[0]) &&
                      (s1[1] == 1 || s1[1] == s0[1]));
}

// A constant as a new memory of `target` (same dims as its padded shape).
memory constant_as(const Tensor& value, const memory::desc& target) {
  memory::dims dims = target.dims();
  memory::desc src = md(value.dtype(), Shape(dims.begin(), dims.end()), Layout::plain);
  memory in(src, engine(), value.raw()), out(target, engine());
  dnnl::reorder(in, out).execute(stream(), in, out);
  stream().wait();
  return out;
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
  const Tensor* b_const = op.constants[size_t(ib)];
  // The full operand's layout, or the other's when both have its shape.
  Layout l0 = a->layout;
  if (l0 == Layout::plain && s1 == y && b->shape.size() == 4) l0 = b->layout;
  // A computed broadcast operand of rank < 4 cannot be delivered blocked (the
  // executor reorders 4-D tensors only); a constant is reordered here.
  bool deliverable = b->shape.size() == 4 || b_const;
  bool keep = deliverable && keeps_layout(l0, y, s1, bop == BinaryOp::div);
  Layout l = keep ? l0 : Layout::plain;
  memory::desc m0 = md(t, y, l), m1 = md(t, s1, l);
  static const dnnl::algorithm algs[] = {dnnl::algorithm::binary_add, dnnl::algorithm::binary_sub,
                                         dnnl::algorithm::binary_mul, dnnl::algorithm::binary_div,
                                         dnnl::algorithm::binary_max, dnnl::algorithm::binary_min};
  dnnl::post_ops po;
  if (negate) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, -1.f, 0.f);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(algs[int(bop)], m0, m1, m0), attr, engine());
  // oneDNN 2.6 has no JIT kernel for some broadcasts (a middle dim of a 5-D
  // tensor: Swin's window mask); its reference kernel costs ~25x the plain
  // loop of binary_reference.cpp, which takes f32.
  if (t == DType::f32 && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return std::nullopt;
  auto k = std::make_unique<PrimitiveKernel>(dnnl::binary(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC_0, ia, m0);
  bool bound = keep && b_const && l != Layout::plain;  // reordered here, never read at run time
  if (bound) k->bind_constant(DNNL_ARG_SRC_1, constant_as(*b_const, m1));
  else k->bind_input(DNNL_ARG_SRC_1, ib, m1);
  k->bind_output(DNNL_ARG_DST, 0, m0);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(2, Layout::plain);
  plan.input_layouts[size_t(ia)] = l;
  if (b->shape.size() == 4 && !bound) plan.input_layouts[size_t(ib)] = l;
  plan.output_layouts = {l};
  return plan;
}

// x ^ c for a constant scalar exponent c: eltwise_pow (alpha * x^beta).
std::optional<KernelPlan> make_scalar_pow(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  const Tensor* e = op.constants.size() > 1 ? op.constants[1] : nullptr;
  if (x.dtype != DType::f32 || !e || e->numel() != 1 || op.outputs[0].shape != x.shape ||
      x.shape.empty() || x.numel() == 0)
    return std::nullopt;
  // 0^negative in a partial channel block's zero padding has no JIT kernel.
  Layout l = x.layout;
  if (layout_block(l) > 1 && x.shape[1] % layout_block(l) != 0) l = Layout::plain;
  TensorDesc xl = x;
  xl.layout = l;
  return eltwise_kernel(xl, dnnl::algorithm::eltwise_pow, 1.f, float(e->scalar_at(0)), nullptr, 2);
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

// Add with broadcasting, and its backward (sum over the broadcast axes), on
// oneDNN's binary_add and reduction_sum, plain tensors of one rank.
//   add_forward: y = a + b; the input with y's shape is oneDNN's src0 (only
//   src1 may broadcast there).
//   sum_to: src [d0, d1, ...] -> dst [e0, e1, ...], each e_i = d_i or 1.
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

const dnnl::binary& add_primitive(Context& c, const Tensor& full, const Tensor& other) {
  return c.cache.get<dnnl::binary>(cache_key("add", full, other), [&] {
    dnnl::binary::desc d(dnnl::algorithm::binary_add, plain_md(full), plain_md(other), plain_md(full));
    return dnnl::binary(dnnl::binary::primitive_desc(d, user_scratchpad_attr(), engine()));
  });
}

const dnnl::reduction& sum_primitive(Context& c, const Tensor& src, const Shape& dst) {
  return c.cache.get<dnnl::reduction>(cache_key("sum_to", src, dst), [&] {
    dnnl::reduction::desc d(dnnl::algorithm::reduction_sum, plain_md(src), plain_md(src.dtype(), to_dims(dst)),
                            0.f, 0.f);
    return dnnl::reduction(dnnl::reduction::primitive_desc(d, user_scratchpad_attr(), engine()));
  });
}

}  // namespace

void add_forward(void* ctx, const Tensor& a, const Tensor& b, const Tensor& y) {
  const char* op = "add_forward";
  require_f32(op, {&a, &b, &y});
  require_shape(op, y, ops::add_output_shape(a.shape(), b.shape()), "y");
  if (y.numel() == 0) return;
  bool a_full = a.shape() == y.shape();
  const Tensor& full = a_full ? a : b;
  const Tensor& other = a_full ? b : a;
  guarded(op, y, [&] {
    run_primitive(add_primitive(context(ctx), full, other), {{DNNL_ARG_SRC_0, plain_memory(full)},
                                                             {DNNL_ARG_SRC_1, plain_memory(other)},
                                                             {DNNL_ARG_DST, plain_memory(y)}});
    stream().wait();
  });
}

void sum_to(void* ctx, const Tensor& src, const GradOut& dst) {
  const char* op = "sum_to";
  require_f32(op, {&src});
  if (!dst.wanted()) return;
  require_f32(op, {&dst.t});
  check(ops::sums_to(src.shape(), dst.t.shape()),
        "cannot sum " + shape_str(src.shape()) + " to " + shape_str(dst.t.shape()), op_context(op, src));
  if (src.shape() == dst.t.shape()) {
    if (dst.mode == GradMode::accumulate) add_into(dst.t.data<float>(), src.data<float>(), src.numel());
    else if (src.numel()) std::memcpy(dst.t.raw(), src.raw(), src.bytes());
    return;
  }
  GradTarget t(dst, dst.t.shape(), op);
  guarded(op, src, [&] {
    run_primitive(sum_primitive(context(ctx), src, dst.t.shape()),
                  {{DNNL_ARG_SRC, plain_memory(src)}, {DNNL_ARG_DST, plain_memory(t.tensor())}});
    stream().wait();
  });
  t.commit();
}

}  // namespace tandem::cpu::train
