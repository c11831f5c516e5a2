// Softmax and LogSoftmax over one axis (ops/softmax.h's [outer, len, inner]
// view; opset 13 semantics and the older coerced-2-D ones), f32, f16 and bf16,
// plain layout. One block per row of `len` elements (stride `inner`): the
// max, then the sum of exp(x - max), each a block reduction in float.
#include <algorithm>
#include <cmath>
#include <memory>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/float_types.h"
#include "cuda/registry.h"
#include "cuda/softmax.h"
#include "ops/softmax.h"

namespace tandem::cuda {

namespace {

template <bool Log, typename T>
__global__ void softmax_kernel(const T* x, T* y, int64_t len, int64_t inner) {
  int64_t row = blockIdx.x, o = row / inner, in = row - o * inner;
  int64_t base = o * len * inner + in;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, load(x, base + j * inner));
  m = block_reduce(m, MaxOp{}, -INFINITY);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += expf(load(x, base + j * inner) - m);
  s = block_reduce(s, SumOp{}, 0.f);
  if (Log) {
    float ls = logf(s);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) store(y, base + j * inner, load(x, base + j * inner) - m - ls);
  } else {
    float r = 1.f / s;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) store(y, base + j * inner, expf(load(x, base + j * inner) - m) * r);
  }
}

// Attention's scores [batch, m, len] (+ bias[(b % period), i, :]) normalized
// in place, the bias added in float.
template <typename T>
__global__ void biased_softmax_kernel(T* x, const T* bias, int64_t len, int64_t m, int64_t period) {
  const int64_t row = blockIdx.x, base = row * len;
  const int64_t bias_base = bias ? ((row / m) % period * m + row % m) * len : 0;
  auto at = [&](int64_t j) { return load(x, base + j) + (bias ? load(bias, bias_base + j) : 0.f); };
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) mx = fmaxf(mx, at(j));
  mx = block_reduce(mx, MaxOp{}, -INFINITY);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += expf(at(j) - mx);
  s = block_reduce(s, SumOp{}, 0.f);
  const float r = 1.f / s;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) store(x, base + j, expf(at(j) - mx) * r);
}

// One block per row: short rows waste no idle warps; long ones get 256
// threads.
int threads_for(int64_t len) { return int(std::min<int64_t>(256, std::max<int64_t>(32, (len + 31) / 32 * 32))); }

template <bool Log, typename T>
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(Context& c, ops::SoftmaxSplit s, ErrorContext where)
      : c_(c), s_(s), threads_(threads_for(s.len)), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    int64_t rows = s_.outer * s_.inner;
    if (rows == 0 || s_.len == 0) return;
    softmax_kernel<Log, T><<<unsigned(rows), threads_, 0, c_.stream>>>(static_cast<const T*>(in[0]),
                                                                        static_cast<T*>(out[0]), s_.len, s_.inner);
    check_launch("softmax_kernel", where_);
  }

 private:
  Context& c_;
  ops::SoftmaxSplit s_;
  int threads_;
  ErrorContext where_;
};

template <bool Log>
std::unique_ptr<Kernel> make_typed(DType t, Context& c, ops::SoftmaxSplit s, const ErrorContext& w) {
  return with_float_type(t, "CUDA softmax", w, [&](auto v) {
    return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel<Log, decltype(v)>>(c, s, w));
  });
}

KernelPlan make_softmax(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  ops::SoftmaxSplit s = ops::softmax_split(op.attributes(), op.opset, x.shape);
  check_supported(s.outer * s.inner <= INT32_MAX, "CUDA softmax over more than 2^31 rows", op.context());
  KernelPlan plan;
  bool log = op.op_type == "LogSoftmax";
  plan.kernel = log ? make_typed<true>(x.dtype, c, s, op.context()) : make_typed<false>(x.dtype, c, s, op.context());
  plan.input_layouts = {Layout::plain};
  plan.output_layouts = {Layout::plain};
  return plan;
}

}  // namespace

void launch_scores_softmax(Context& c, DType t, void* scores, int64_t rows, int64_t len, const ScoresBias& bias,
                           const ErrorContext& where) {
  check_supported(rows <= INT32_MAX, "CUDA softmax over more than 2^31 rows", where);
  if (rows == 0 || len == 0) return;
  const int threads = threads_for(len);
  with_float_type(t, "CUDA attention softmax", where, [&](auto v) {
    using T = decltype(v);
    biased_softmax_kernel<T><<<unsigned(rows), threads, 0, c.stream>>>(
        static_cast<T*>(scores), static_cast<const T*>(bias.data), len, std::max<int64_t>(bias.rows, 1),
        std::max<int64_t>(bias.period, 1));
  });
  check_launch("biased_softmax_kernel", where);
}

void register_softmax_kernels() {
  register_kernel("Softmax", make_softmax);
  register_kernel("LogSoftmax", make_softmax);
}

}  // namespace tandem::cuda
