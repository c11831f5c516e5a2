// tandem.Attention (ops/attention.h) as two strided batched cuBLASLt
// products around a softmax: the scores S = scale * Q K^T land in the
// executor's scratch ([batch, m, n], the operand dtype, as PyTorch keeps
// them), take the bias and are normalized in place, and P V is written
// straight into Y's view. Q, K and V are read where they lie: a view whose rows or columns
// are contiguous is a cuBLASLt matrix with a leading dimension and a batch
// stride (ops::strided_matrix), so no head is ever copied out. f32, f16,
// bf16.
#include "ops/attention.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/float_types.h"
#include "cuda/lt_matmul.h"
#include "cuda/registry.h"
#include "cuda/softmax.h"

namespace tandem::cuda {

namespace {

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(Context& c, DType t, const ops::AttentionParams& p, const LtMatmulSpec& scores,
                  const LtMatmulSpec& output, ErrorContext where)
      : c_(c),
        dtype_(t),
        p_(p),
        where_(std::move(where)),
        scores_(c, scores, where_),
        output_(c, output, where_) {}

  void run(const void* const* in, void* const* out, const RunContext& rc) override {
    check(rc.scratch_bytes >= scratch_bytes(),
          "CUDA attention got " + std::to_string(rc.scratch_bytes) + " scratch bytes, needs " +
              std::to_string(scratch_bytes()),
          where_);
    const size_t es = dtype_size(dtype_);
    auto at = [&](const void* base, int64_t offset) {
      return static_cast<const char*>(base) + size_t(offset) * es;
    };
    scores_.run(at(in[0], p_.q.offset), at(in[1], p_.k.offset), nullptr, rc.scratch);
    ScoresBias bias;
    if (p_.bias_period) bias = {in[3], p_.m, p_.bias_period};
    launch_scores_softmax(c_, dtype_, rc.scratch, p_.batch * p_.m, p_.n, bias, where_);
    output_.run(rc.scratch, at(in[2], p_.v.offset), nullptr, out[0]);
  }

  size_t scratch_bytes() const override {
    return size_t(p_.batch * p_.m * p_.n) * dtype_size(dtype_);
  }

 private:
  Context& c_;
  DType dtype_;
  ops::AttentionParams p_;
  ErrorContext where_;
  LtMatmul scores_, output_;
};

KernelPlan make_attention(const OpDesc& op, Context& c) {
  const DType t = op.inputs[0].dtype;
  const ErrorContext where = op.context();
  check_supported(t == DType::f32 || is_16bit_float(t),
                  "CUDA attention takes f32, f16 or bf16, not " + op.inputs[0].str(), where);
  std::vector<int64_t> numel;
  for (const TensorDesc& t : op.inputs) numel.push_back(t.numel());
  const ops::AttentionParams p = ops::attention_params(op.attributes(), numel);
  // cuBLASLt is promised 16-byte aligned matrices (cuda/lt_matmul.cpp);
  // the row-major results need Y's rows contiguous.
  check_supported(ops::attention_fits_blas(p),
                  "CUDA attention: an operand view is no strided matrix on a 16-byte boundary",
                  where);

  LtMatmulSpec s;  // S = scale * Q [m, d] x K^T [d, n]
  s.dtype = t;
  s.m = p.m, s.n = p.n, s.k = p.d, s.batch = p.batch;
  s.alpha = p.scale;
  const ops::StridedMatrix q = *ops::strided_matrix(p.m, p.d, p.q.strides[1], p.q.strides[2]);
  s.trans_a = q.transposed, s.ld_a = q.ld, s.stride_a = p.q.strides[0];
  // K^T as stored: K [n, d] row-major is K^T transposed.
  const ops::StridedMatrix kt = *ops::strided_matrix(p.d, p.n, p.k.strides[2], p.k.strides[1]);
  s.trans_b = kt.transposed, s.ld_b = kt.ld, s.stride_b = p.k.strides[0];
  s.stride_d = p.m * p.n;

  LtMatmulSpec o;  // Y = P [m, n] x V [n, dv]
  o.dtype = t;
  o.m = p.m, o.n = p.dv, o.k = p.n, o.batch = p.batch;
  o.stride_a = p.m * p.n;
  const ops::StridedMatrix v = *ops::strided_matrix(p.n, p.dv, p.v.strides[1], p.v.strides[2]);
  o.trans_b = v.transposed, o.ld_b = v.ld, o.stride_b = p.v.strides[0];
  o.ld_d = ops::strided_matrix(p.m, p.dv, p.y.strides[1], p.y.strides[2])->ld;
  o.stride_d = p.y.strides[0];

  KernelPlan plan;
  plan.kernel = std::make_unique<AttentionKernel>(c, t, p, s, o, where);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

}  // namespace

void register_attention_kernels() { register_kernel(ops::kAttentionOp, make_attention); }

}  // namespace tandem::cuda
