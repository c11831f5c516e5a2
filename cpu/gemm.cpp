// Gemm, tandem.FusedGemm and MatMul; all tensors plain. Training's linear
// entries (after them) run the inner product the fully-connected case uses.
//   Fully-connected case (Gemm with constant B, transA=0, C absent or a
//   constant [N]/[1,N]/scalar bias): oneDNN inner_product; B is reordered once
//   into the primitive's preferred weights format with alpha folded in, C
//   becomes the bias with beta folded in.
//   Otherwise: oneDNN matmul. Transposes are strides on the operand
//   descriptors, alpha an output scale, beta*C a binary-add post-op (for a
//   computed C and beta != 1: scale alpha/beta, add C, then multiply by beta).
//   FusedGemm's activation is an eltwise post-op after the bias.
// MatMul: [..., M, K] x [..., K, N] with numpy broadcasting of batch dims;
// a 2-D B lets all of A's leading dims fold into M (one large GEMM).
#include <optional>

#include "cpu/dnnl_utils.h"
#include "cpu/post_ops.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"
#include "ops/gemm.h"

namespace tandem::cpu {

namespace {

using dnnl::memory;

// Descriptor of a logical [rows, cols] matrix whose bytes are row-major
// [rows, cols], or row-major [cols, rows] when `transposed` (ONNX transA/B).
memory::desc matrix_md(DType t, int64_t rows, int64_t cols, bool transposed) {
  memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return memory::desc({rows, cols}, to_dnnl(t), strides);
}

// Copies a constant through a reorder from `src` (describing t's bytes) to a
// new memory of `dst`, multiplying by `scale`.
memory reorder_constant(const Tensor& t, const memory::desc& src, const memory::desc& dst, float scale) {
  memory out(dst, engine());
  memory in(src, engine(), t.raw());
  dnnl::primitive_attr attr;
  if (scale != 1.f) attr.set_output_scales(0, {scale});
  dnnl::reorder::primitive_desc pd(engine(), src, engine(), dst, attr);
  dnnl::reorder(pd).execute(stream(), in, out);
  stream().wait();
  return out;
}

dnnl::primitive_attr gemm_attr(const dnnl::post_ops& po) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  return attr;
}

ops::Activation activation_of(const OpDesc& op) {
  return op.op_type == ops::kFusedGemmOp ? ops::parse_fused_activation(op.attributes())
                                         : ops::Activation{};
}

KernelPlan plain_plan(std::unique_ptr<Kernel> k, size_t inputs) {
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(inputs, Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

// The inner product of both uses, the fully-connected Gemm and training's
// linear; a zero `bias` descriptor: none.
dnnl::inner_product_forward::desc inner_product(dnnl::prop_kind prop, const memory::desc& src,
                                                const memory::desc& w, const memory::desc& bias,
                                                const memory::desc& dst) {
  if (bias) return {prop, src, w, bias, dst};
  return {prop, src, w, dst};
}

// The fully-connected case; nullopt when the operands do not fit it.
std::optional<KernelPlan> make_inner_product(const OpDesc& op, const ops::GemmParams& p) {
  const Tensor* b = op.constants[1];
  const Tensor* c = op.has_input(2) ? op.constants[2] : nullptr;
  bool bias_like = !op.has_input(2) || p.beta == 0.f ||
                   (c && (c->numel() == 1 || (c->numel() == p.n && c->shape().back() == p.n)));
  if (!b || p.trans_a || !bias_like) return std::nullopt;
  DType t = op.inputs[0].dtype;
  memory::desc src = matrix_md(t, p.m, p.k, false), dst = matrix_md(t, p.m, p.n, false);
  memory::desc w_any({p.n, p.k}, to_dnnl(t), memory::format_tag::any);
  memory::desc bias({p.n}, to_dnnl(t), memory::format_tag::x);
  bool has_bias = op.has_input(2) && p.beta != 0.f;
  dnnl::post_ops po;
  append_activation(po, activation_of(op));
  auto d = inner_product(dnnl::prop_kind::forward_inference, src, w_any, has_bias ? bias : memory::desc(), dst);
  dnnl::inner_product_forward::primitive_desc pd(d, gemm_attr(po), engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::inner_product_forward(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, src);
  // Weights are [N, K] for oneDNN: ONNX's B^T, i.e. B itself when transB=1.
  k->bind_constant(DNNL_ARG_WEIGHTS,
                   reorder_constant(*b, matrix_md(t, p.n, p.k, !p.trans_b), pd.weights_desc(), p.alpha));
  if (has_bias) {
    Tensor cb = *c;
    if (c->numel() == 1) {  // scalar bias broadcast over N
      cb = Tensor::empty(DType::f32, {p.n});
      for (int64_t i = 0; i < p.n; ++i) cb.data<float>()[i] = float(c->scalar_at(0));
      bias = memory::desc({p.n}, memory::data_type::f32, memory::format_tag::x);
    }
    k->bind_constant(DNNL_ARG_BIAS, reorder_constant(cb, bias, pd.bias_desc(), p.beta));
  }
  k->bind_output(DNNL_ARG_DST, 0, dst);
  return plain_plan(std::move(k), op.inputs.size());
}

// C as a [1|M, 1|N] plain descriptor for the binary post-op.
memory::desc c_md(const TensorDesc& c) {
  Shape s = c.shape;
  while (s.size() < 2) s.insert(s.begin(), 1);
  return md(c.dtype, s, Layout::plain);
}

KernelPlan make_gemm_matmul(const OpDesc& op, const ops::GemmParams& p) {
  DType t = op.inputs[0].dtype;
  // A is [M,K] or, transposed, stored [K,M]; likewise B.
  memory::desc a = matrix_md(t, p.m, p.k, p.trans_a), b = matrix_md(t, p.k, p.n, p.trans_b);
  memory::desc y = matrix_md(t, p.m, p.n, false);
  bool use_c = op.has_input(2) && p.beta != 0.f;
  const Tensor* c = use_c ? op.constants[2] : nullptr;
  // A computed C with beta != 1: dst = beta * ((alpha/beta) * AB + C).
  bool beta_trick = use_c && !c && p.beta != 1.f;
  dnnl::post_ops po;
  if (use_c) po.append_binary(dnnl::algorithm::binary_add, c_md(op.inputs[2]));
  if (beta_trick) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, p.beta, 0.f);
  append_activation(po, activation_of(op));
  dnnl::primitive_attr attr = gemm_attr(po);
  float scale = beta_trick ? p.alpha / p.beta : p.alpha;
  if (scale != 1.f) attr.set_output_scales(0, {scale});
  const Tensor* bc = op.constants[1];
  memory::desc b_arg = bc ? memory::desc({p.k, p.n}, to_dnnl(t), memory::format_tag::any) : b;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b_arg, y), attr, engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::matmul(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, a);
  if (bc) k->bind_constant(DNNL_ARG_WEIGHTS, reorder_constant(*bc, b, pd.weights_desc(), 1.f));
  else k->bind_input(DNNL_ARG_WEIGHTS, 1, b);
  int c_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
  if (c) k->bind_constant(c_arg, reorder_constant(*c, c_md(op.inputs[2]), c_md(op.inputs[2]), p.beta));
  else if (use_c) k->bind_input(c_arg, 2, c_md(op.inputs[2]));
  k->bind_output(DNNL_ARG_DST, 0, y);
  return plain_plan(std::move(k), op.inputs.size());
}

void check_float(const TensorDesc& t, const char* what) {
  check_supported(t.dtype == DType::f32 || t.dtype == DType::bf16,
        std::string("CPU ") + what + " supports f32 and bf16, got " + t.str());
}

KernelPlan make_gemm(const OpDesc& op) {
  check_float(op.inputs[0], "Gemm");
  const Shape* c = op.has_input(2) ? &op.inputs[2].shape : nullptr;
  ops::GemmParams p = ops::gemm_params(op.attributes(), op.inputs[0].shape, op.inputs[1].shape, c);
  if (auto plan = make_inner_product(op, p)) return std::move(*plan);
  return make_gemm_matmul(op, p);
}

// MatMul operand dims at the common rank r: A [..., M, K], B [..., K, N].
struct MatMulDims {
  memory::dims a, b, y;
};

MatMulDims matmul_dims(const Shape& sa, const Shape& sb) {
  Shape a = sa.size() == 1 ? Shape{1, sa[0]} : sa;
  Shape b = sb.size() == 1 ? Shape{sb[0], 1} : sb;
  if (b.size() == 2 && a.size() > 2) {
    // Fold A's batch dims into M: [B..., M, K] -> [B*M, K].
    int64_t rows = shape_numel(Shape(a.begin(), a.end() - 1));
    a = {rows, a.back()};
  }
  size_t r = std::max(a.size(), b.size());
  while (a.size() < r) a.insert(a.begin(), 1);
  while (b.size() < r) b.insert(b.begin(), 1);
  Shape y = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  y.push_back(a[r - 2]);
  y.push_back(b[r - 1]);
  return {to_dims(a), to_dims(b), to_dims(y)};
}

KernelPlan make_matmul(const OpDesc& op) {
  check_float(op.inputs[0], "MatMul");
  DType t = op.inputs[0].dtype;
  MatMulDims d = matmul_dims(op.inputs[0].shape, op.inputs[1].shape);
  auto plain_md = [&](const memory::dims& dims) { return md(t, Shape(dims.begin(), dims.end()), Layout::plain); };
  memory::desc a = plain_md(d.a), b = plain_md(d.b), y = plain_md(d.y);
  const Tensor* bc = op.constants[1];
  memory::desc b_arg = bc ? memory::desc(d.b, to_dnnl(t), memory::format_tag::any) : b;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b_arg, y), gemm_attr({}), engine());
  auto k = std::make_unique<PrimitiveKernel>(dnnl::matmul(pd), pd.scratchpad_desc());
  k->bind_input(DNNL_ARG_SRC, 0, a);
  if (bc) k->bind_constant(DNNL_ARG_WEIGHTS, reorder_constant(*bc, b, pd.weights_desc(), 1.f));
  else k->bind_input(DNNL_ARG_WEIGHTS, 1, b);
  k->bind_output(DNNL_ARG_DST, 0, y);
  return plain_plan(std::move(k), 2);
}

}  // namespace

void register_gemm_kernels() {
  register_kernel("Gemm", make_gemm);
  register_kernel(ops::kFusedGemmOp, make_gemm);
  register_kernel("MatMul", make_matmul);
}

}  // namespace tandem::cpu

// Linear (y = x·wᵀ + b) for training on oneDNN's inner product: forward
// (forward_training), backward_data, backward_weights (with the bias
// gradient), all on plain tensors.
//   x [N, K], w [M, K], b [M], y / dy [N, M].
namespace tandem::cpu::train {

namespace {

using dnnl::memory;

struct Entry {
  dnnl::inner_product_forward::primitive_desc fwd_pd;
  dnnl::inner_product_forward fwd;
  dnnl::inner_product_backward_data data;
  dnnl::inner_product_backward_weights weights;
};

// One entry holds the three primitives: their builds share the forward hint.
const Entry& entry(Context& c, const Tensor& x, const Tensor& w, bool bias) {
  return c.cache.get<Entry>(cache_key("linear", x, w, bias), [&] {
    Shape ys = ops::linear_output_shape(x.shape(), w.shape());
    memory::desc src = plain_md(x), wei = plain_md(w), dst = plain_md(x.dtype(), to_dims(ys));
    memory::desc b = bias ? plain_md(x.dtype(), {w.dim(0)}) : memory::desc();
    dnnl::inner_product_forward::primitive_desc fpd(
        inner_product(dnnl::prop_kind::forward_training, src, wei, b, dst), user_scratchpad_attr(),
        engine());
    dnnl::inner_product_backward_data::desc dd(src, wei, dst);
    dnnl::inner_product_backward_data::primitive_desc dpd(dd, user_scratchpad_attr(), engine(),
                                                          fpd);
    auto wd = bias ? dnnl::inner_product_backward_weights::desc(src, wei, b, dst)
                   : dnnl::inner_product_backward_weights::desc(src, wei, dst);
    dnnl::inner_product_backward_weights::primitive_desc wpd(wd, user_scratchpad_attr(), engine(),
                                                             fpd);
    return Entry{fpd, dnnl::inner_product_forward(fpd), dnnl::inner_product_backward_data(dpd),
                 dnnl::inner_product_backward_weights(wpd)};
  });
}

void check_inputs(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  require_f32(op, {&x, &w, &b});
  ops::linear_output_shape(x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

}  // namespace

void linear_forward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  const char* op = "linear_forward";
  check_inputs(op, x, w, b);
  require_f32(op, {&y});
  require_shape(op, y, ops::linear_output_shape(x.shape(), w.shape()), "y");
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), x, w, b.defined());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_WEIGHTS, plain_memory(w)}, {DNNL_ARG_DST, plain_memory(y)}};
    if (b.defined()) args[DNNL_ARG_BIAS] = plain_memory(b);
    run_primitive(e.fwd, args);
    stream().wait();
  });
}

void linear_backward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& dy, const GradOut& dx,
                     const GradOut& dw, const GradOut& db) {
  const char* op = "linear_backward";
  check_inputs(op, x, w, Tensor());
  require_f32(op, {&dy});
  require_shape(op, dy, ops::linear_output_shape(x.shape(), w.shape()), "dy");
  guarded(op, x, [&] {
    bool bias = db.wanted();
    const Entry& e = entry(context(ctx), x, w, bias);
    if (dx.wanted()) {
      GradTarget t(dx, x.shape(), op);
      run_primitive(e.data, {{DNNL_ARG_DIFF_DST, plain_memory(dy)},
                             {DNNL_ARG_WEIGHTS, plain_memory(w)},
                             {DNNL_ARG_DIFF_SRC, plain_memory(t.tensor())}});
      stream().wait();
      t.commit();
    }
    if (dw.wanted() || bias) {
      GradTarget tw(dw, w.shape(), op), tb(db, {w.dim(0)}, op);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_DIFF_DST, plain_memory(dy)},
                                           {DNNL_ARG_DIFF_WEIGHTS, plain_memory(tw.tensor())}};
      if (bias) args[DNNL_ARG_DIFF_BIAS] = plain_memory(tb.tensor());
      run_primitive(e.weights, args);
      stream().wait();
      tw.commit();
      tb.commit();
    }
  });
}

}  // namespace tandem::cpu::train
