// Gemm, tandem.FusedGemm and MatMul on cuBLASLt (cuda/lt_matmul.h); f32, f16
// and bf16, plain layout.
//   Gemm's C: a constant [N], [1,N] or scalar C becomes cuBLASLt's bias
//   epilogue (beta folded in, uploaded once); a C of Y's shape [M,N] is
//   cuBLASLt's C (beta on it); any other broadcast ([M,1], a computed [N])
//   is added by our epilogue kernel. Relu fuses into cuBLASLt's epilogue when
//   nothing is left for ours; other activations run in ours.
//   Constant weights B need no conversion (cuBLASLt reads row-major through
//   swapped operands), so the executor's device copy of them is used.
// MatMul: numpy.matmul; a 2-D B folds all of A's leading dims into M, else
// batch dims must match Y's or be all 1 (strided batch, stride 0 repeats).
#include <memory>
#include <optional>

#include "cuda/device_buffer.h"
#include "cuda/float_types.h"
#include "cuda/gemm_epilogue.h"
#include "cuda/lt_matmul.h"
#include "cuda/registry.h"
#include "ops/gemm.h"

namespace tandem::cuda {

namespace {

// Inputs: A, B and, when used, C at index 2 (read by cuBLASLt when it has
// Y's shape, else by the epilogue).
class MatmulKernel final : public Kernel {
 public:
  MatmulKernel(Context& c, const LtMatmulSpec& s, DeviceBuffer bias, std::optional<GemmEpilogue> epi,
               bool epilogue_reads_c, ErrorContext where)
      : c_(c), dtype_(s.dtype), bias_(std::move(bias)), epi_(epi), epi_c_(epilogue_reads_c), lt_c_(s.with_c), where_(where),
        mm_(c, with_bias(s), std::move(where)) {}

  void run(const void* const* in, void* const* out, const RunContext&) override {
    mm_.run(in[0], in[1], lt_c_ ? in[2] : nullptr, out[0]);
    if (epi_) {
      GemmEpilogue e = *epi_;
      e.c = epi_c_ ? in[2] : nullptr;
      launch_gemm_epilogue(c_, dtype_, out[0], e, where_);
    }
  }

 private:
  LtMatmulSpec with_bias(LtMatmulSpec s) const {
    if (bias_) s.bias = bias_.get();
    return s;
  }

  Context& c_;
  DType dtype_;
  DeviceBuffer bias_;  // before mm_: its pointer is baked into mm_
  std::optional<GemmEpilogue> epi_;
  bool epi_c_;
  bool lt_c_;  // cuBLASLt reads C (input 2)
  ErrorContext where_;
  LtMatmul mm_;
};

void check_float(const OpDesc& op, size_t inputs) {
  for (size_t i = 0; i < inputs; ++i)
    if (op.has_input(i))
      check_supported((op.inputs[i].dtype == DType::f32 || is_16bit_float(op.inputs[i].dtype)) &&
                          op.inputs[i].dtype == op.inputs[0].dtype,
                      "CUDA " + op.op_type + " takes f32, f16 or bf16 operands of one dtype, got " +
                          op.inputs[i].str(),
                      op.context());
}

KernelPlan plain_plan(std::unique_ptr<Kernel> k, size_t inputs) {
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(inputs, Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

// Y = 0 for an empty product (K = 0) would need its own kernel; no
// classifier has one.
void check_nonempty_k(const OpDesc& op, int64_t k) {
  check_supported(k > 0, "CUDA " + op.op_type + " with K = 0", op.context());
}

class NoOpKernel final : public Kernel {
 public:
  void run(const void* const*, void* const*, const RunContext&) override {}
};

KernelPlan make_gemm(const OpDesc& op, Context& c) {
  check_float(op, 3);
  const TensorDesc& a = op.inputs[0];
  const Shape* cshape = op.has_input(2) ? &op.inputs[2].shape : nullptr;
  ops::GemmParams p = ops::gemm_params(op.attributes(), a.shape, op.inputs[1].shape, cshape);
  if (p.m == 0 || p.n == 0) return plain_plan(std::make_unique<NoOpKernel>(), op.inputs.size());
  check_nonempty_k(op, p.k);
  ops::Activation act =
      op.op_type == ops::kFusedGemmOp ? ops::parse_fused_activation(op.attributes()) : ops::Activation{};

  LtMatmulSpec s;
  s.dtype = a.dtype;
  s.m = p.m, s.n = p.n, s.k = p.k;
  s.trans_a = p.trans_a, s.trans_b = p.trans_b;
  s.alpha = p.alpha;
  DeviceBuffer bias;
  std::optional<GemmEpilogue> epi;
  bool epi_c = false;
  if (op.has_input(2) && p.beta != 0.f) {
    const Tensor* cc = op.constants[2];
    Shape cs = *cshape;
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    int64_t cn = shape_numel(*cshape);
    if (cc && (cn == 1 || (cn == p.n && cs[1] == p.n))) {
      std::vector<float> v(size_t(p.n));
      for (int64_t j = 0; j < p.n; ++j) v[size_t(j)] = p.beta * float(cc->scalar_at(cn == 1 ? 0 : j));
      bias = upload_floats(c, v, a.dtype, op.context());
    } else if (cs[0] == p.m && cs[1] == p.n) {
      s.with_c = true;
      s.beta = p.beta;
    } else {
      GemmEpilogue e;
      e.c_row_stride = cs[0] == 1 ? 0 : cs[1];
      e.c_col_stride = cs[1] == 1 ? 0 : 1;
      e.beta = p.beta;
      epi = e;
      epi_c = true;
    }
  }
  if (act.kind == ops::ActivationKind::relu && !epi) {
    s.relu = true;
  } else if (act.kind != ops::ActivationKind::none) {
    if (!epi) epi = GemmEpilogue{};
    epi->act = act;
  }
  if (epi) epi->rows = p.m, epi->cols = p.n;
  bool bias_kept = bool(bias);
  auto k = std::make_unique<MatmulKernel>(c, s, std::move(bias), epi, epi_c, op.context());
  KernelPlan plan = plain_plan(std::move(k), op.inputs.size());
  if (bias_kept) plan.keeps_constant = {false, false, true};  // folded into the uploaded bias
  return plan;
}

bool all_ones(const Shape& s) {
  for (int64_t d : s)
    if (d != 1) return false;
  return true;
}

KernelPlan make_matmul(const OpDesc& op, Context& c) {
  check_float(op, 2);
  Shape a = op.inputs[0].shape, b = op.inputs[1].shape;
  if (a.size() == 1) a = {1, a[0]};
  if (b.size() == 1) b = {b[0], 1};
  check(a.size() >= 2 && b.size() >= 2 && a.back() == b[b.size() - 2], "MatMul operands do not match: " +
        op.inputs[0].str() + " x " + op.inputs[1].str(), op.context());
  LtMatmulSpec s;
  s.dtype = op.inputs[0].dtype;
  s.k = a.back();
  s.n = b.back();
  if (b.size() == 2) {
    s.m = shape_numel(Shape(a.begin(), a.end() - 1));  // A's batch dims fold into M
  } else {
    s.m = a[a.size() - 2];
    size_t r = std::max(a.size(), b.size());
    while (a.size() < r) a.insert(a.begin(), 1);
    while (b.size() < r) b.insert(b.begin(), 1);
    Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    Shape by = broadcast_shapes(ba, bb);
    check_supported((ba == by || all_ones(ba)) && (bb == by || all_ones(bb)),
                    "CUDA MatMul broadcasts batch dims only all-or-nothing: " + op.inputs[0].str() + " x " +
                        op.inputs[1].str(), op.context());
    s.batch = shape_numel(by);
    s.stride_a = all_ones(ba) ? 0 : s.m * s.k;
    s.stride_b = all_ones(bb) ? 0 : s.k * s.n;
    s.stride_d = s.m * s.n;
  }
  if (s.m == 0 || s.n == 0 || s.batch == 0) return plain_plan(std::make_unique<NoOpKernel>(), 2);
  check_nonempty_k(op, s.k);
  auto k = std::make_unique<MatmulKernel>(c, s, DeviceBuffer{}, std::nullopt, false, op.context());
  return plain_plan(std::move(k), 2);
}

}  // namespace

void register_gemm_kernels() {
  register_kernel("Gemm", make_gemm);
  register_kernel(ops::kFusedGemmOp, make_gemm);
  register_kernel("MatMul", make_matmul);
}

}  // namespace tandem::cuda
