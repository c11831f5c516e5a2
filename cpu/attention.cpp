// tandem.Attention (ops/attention.h) by direct loops, float accumulation,
// one query row at a time. The fusion that makes this op runs for GPU
// sessions (graph/fuse_attention.cpp); on the CPU oneDNN's matmuls with the
// explicit head copies are faster, so this kernel serves a row the GPU
// declines and is the readable statement of the op's meaning.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cpu/registry.h"
#include "cpu/typed.h"

namespace tandem::cpu {

namespace {

template <class T>
class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const ops::AttentionParams& p) : p_(p) {}

  void run(const void* const* in, void* const* out, const RunContext&) override {
    std::vector<float> score(size_t(p_.n)), acc(size_t(p_.dv));
    for (int64_t b = 0; b < p_.batch; ++b)
      for (int64_t i = 0; i < p_.m; ++i) {
        float top = -INFINITY;
        for (int64_t j = 0; j < p_.n; ++j) {
          float s = 0.f;
          for (int64_t c = 0; c < p_.d; ++c)
            s += load<T>(in[0], at(p_.q, b, i, c)) * load<T>(in[1], at(p_.k, b, j, c));
          score[size_t(j)] = s * p_.scale;
          if (p_.bias_period)
            score[size_t(j)] += load<T>(in[3], ((b % p_.bias_period) * p_.m + i) * p_.n + j);
          top = std::max(top, score[size_t(j)]);
        }
        float sum = 0.f;
        for (float& s : score) sum += (s = std::exp(s - top));
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t j = 0; j < p_.n; ++j)
          for (int64_t c = 0; c < p_.dv; ++c)
            acc[size_t(c)] += score[size_t(j)] * load<T>(in[2], at(p_.v, b, j, c));
        for (int64_t c = 0; c < p_.dv; ++c)
          store<T>(out[0], at(p_.y, b, i, c), acc[size_t(c)] / sum);
      }
  }

 private:
  static int64_t at(const ops::AttentionView& v, int64_t b, int64_t i, int64_t j) {
    return v.offset + b * v.strides[0] + i * v.strides[1] + j * v.strides[2];
  }

  ops::AttentionParams p_;
};

KernelPlan make_attention(const OpDesc& op) {
  std::vector<int64_t> numel;
  for (const TensorDesc& t : op.inputs) numel.push_back(t.numel());
  const ops::AttentionParams p = ops::attention_params(op.attributes(), numel);
  KernelPlan plan;
  switch (op.inputs[0].dtype) {
    case DType::f32:
      plan.kernel = std::make_unique<AttentionKernel<float>>(p);
      break;
    case DType::f16:
      plan.kernel = std::make_unique<AttentionKernel<F16>>(p);
      break;
    case DType::bf16:
      plan.kernel = std::make_unique<AttentionKernel<BF16>>(p);
      break;
    default:
      throw Error::unsupported("CPU attention takes f32, f16 or bf16, not " + op.inputs[0].str(),
                               op.context());
  }
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

}  // namespace

void register_attention_kernels() { register_kernel(ops::kAttentionOp, make_attention); }

}  // namespace tandem::cpu
