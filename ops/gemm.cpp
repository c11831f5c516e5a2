#include "ops/gemm.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

GemmParams gemm_params(const Attributes& a, const Shape& sa, const Shape& sb, const Shape* sc) {
  check(sa.size() == 2 && sb.size() == 2,
        "Gemm operands must be 2-D, got " + shape_str(sa) + " and " + shape_str(sb));
  GemmParams p;
  p.trans_a = a.get_int("transA", 0) != 0;
  p.trans_b = a.get_int("transB", 0) != 0;
  p.alpha = a.get_float("alpha", 1.f);
  p.beta = a.get_float("beta", 1.f);
  p.m = p.trans_a ? sa[1] : sa[0];
  p.k = p.trans_a ? sa[0] : sa[1];
  int64_t kb = p.trans_b ? sb[1] : sb[0];
  p.n = p.trans_b ? sb[0] : sb[1];
  check(p.k < 0 || kb < 0 || p.k == kb, "Gemm inner extents differ: A " + shape_str(sa) +
                                            " B " + shape_str(sb));
  if (sc) {
    check(sc->size() <= 2, "Gemm C must have rank <= 2, got " + shape_str(*sc));
    Shape y{p.m, p.n};
    for (size_t i = 0; i < sc->size(); ++i) {
      int64_t ci = (*sc)[i], yi = y[2 - sc->size() + i];
      check(ci == 1 || ci == yi || ci < 0 || yi < 0,
            "Gemm C " + shape_str(*sc) + " does not broadcast to " + shape_str(y));
    }
  }
  return p;
}

Shape matmul_output_shape(const Shape& a, const Shape& b) {
  check(!a.empty() && !b.empty(), "MatMul operands must have rank >= 1");
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  int64_t ka = a2.back(), kb = b2[b2.size() - 2];
  check(ka < 0 || kb < 0 || ka == kb,
        "MatMul inner extents differ: " + shape_str(a) + " x " + shape_str(b));
  Shape batch = broadcast_shapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  Shape y = batch;
  if (a.size() > 1) y.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) y.push_back(b2.back());
  return y;
}

namespace {

std::vector<TensorDesc> infer_gemm(const InferContext& c) {
  DType t = c.inputs[0].dtype;
  check(c.inputs[1].dtype == t, "Gemm operand dtypes differ");
  const Shape* sc = c.has_input(2) ? &c.shape(2) : nullptr;
  if (sc) check(c.inputs[2].dtype == t, "Gemm C dtype differs from A");
  GemmParams p = gemm_params(c.attributes(), c.shape(0), c.shape(1), sc);
  if (c.op_type == kFusedGemmOp) parse_fused_activation(c.attributes());
  return {TensorDesc{t, {p.m, p.n}}};
}

std::vector<TensorDesc> infer_matmul(const InferContext& c) {
  check(c.inputs[1].dtype == c.inputs[0].dtype, "MatMul operand dtypes differ");
  return {TensorDesc{c.inputs[0].dtype, matmul_output_shape(c.shape(0), c.shape(1))}};
}

}  // namespace

void register_gemm_schemas() {
  register_schema({"Gemm", 2, 3, infer_gemm});
  register_schema({kFusedGemmOp, 2, 3, infer_gemm});
  register_schema({"MatMul", 2, 2, infer_matmul});
}

Shape linear_output_shape(const Shape& x, const Shape& w) {
  TANDEM_CHECK(x.size() == 2 && w.size() == 2 && x[1] == w[1],
               "linear wants x [N,K] and w [M,K], w is " + shape_str(w),
               shape_context("linear", x));
  return {x[0], w[0]};
}

}  // namespace tandem::ops
