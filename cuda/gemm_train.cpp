// Linear (y = x·wᵀ + b) for training on cuBLASLt (cuda/lt_matmul.h, fp32
// accumulation, never TF32): forward, data gradient and weight gradient are
// one matmul each, a gradient accumulated through cuBLASLt's C (beta = 1,
// C = D). The bias is added, and its gradient summed, by cuda/binary_train.cu.
//   x [N, K], w [M, K], b [M], y / dy [N, M].
//   y  [N, M] = x [N, K] · w [M, K]ᵀ
//   dx [N, K] = dy [N, M] · w [M, K]
//   dw [M, K] = dy [N, M]ᵀ · x [N, K]
#include <cstdint>

#include "cuda/lt_matmul.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

// One product D [m, n] (=, or += when accumulating) op(A) · op(B) on
// row-major operands, through a cuBLASLt plan kept per shape.
struct Product {
  int64_t m, n, k;
  bool trans_a, trans_b;
};

void multiply(TrainContext& c, const Product& pr, DType dtype, const void* a, const void* b, void* d, bool accumulate,
              const ErrorContext& where) {
  if (pr.m == 0 || pr.n == 0) return;
  size_t d_bytes = size_t(pr.m * pr.n) * dtype_size(dtype);
  if (pr.k == 0) {  // an empty sum: zeros, or nothing to add
    if (!accumulate) check_cuda(cudaMemsetAsync(d, 0, d_bytes, c.gpu.stream), "cudaMemsetAsync", where);
    return;
  }
  for (const void* p : {a, b, static_cast<const void*>(d)})
    TANDEM_CHECK_SUPPORTED(reinterpret_cast<uintptr_t>(p) % 16 == 0,
                           "cuBLASLt operands must be 16-byte aligned", where);
  std::string key = cache_key("linear", dtype, pr.m, pr.n, pr.k, pr.trans_a, pr.trans_b, accumulate);
  LtMatmul& mm = c.plans.get<LtMatmul>(key, [&] {
    LtMatmulSpec s;
    s.dtype = dtype;
    s.m = pr.m, s.n = pr.n, s.k = pr.k;
    s.trans_a = pr.trans_a, s.trans_b = pr.trans_b;
    s.with_c = accumulate;
    s.beta = accumulate ? 1.f : 0.f;
    return std::make_unique<LtMatmul>(c.gpu, s, where);
  });
  mm.run(a, b, d, d);
}

void check_inputs(const TrainContext& c, const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  require_f32(c, op, {&x, &w, &b});
  ops::linear_output_shape(x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

}  // namespace

void linear_forward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  const char* op = "linear_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, w, b);
  require_f32(c, op, {&y});
  require_shape(op, y, ops::linear_output_shape(x.shape(), w.shape()), "y");
  ErrorContext where = op_context(op, x);
  int64_t n = x.dim(0), k = x.dim(1), m = w.dim(0);
  multiply(c, {n, m, k, false, true}, x.dtype(), x.raw(), w.raw(), y.raw(), false, where);
  if (b.defined()) launch_add(c, y, b.reshaped({1, m}), y, where);
}

void linear_backward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& dy, const GradOut& dx,
                     const GradOut& dw, const GradOut& db) {
  const char* op = "linear_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, x, w, Tensor());
  require_f32(c, op, {&dy});
  require_shape(op, dy, ops::linear_output_shape(x.shape(), w.shape()), "dy");
  ErrorContext where = op_context(op, x);
  int64_t n = x.dim(0), k = x.dim(1), m = w.dim(0);
  if (GradPtr g = grad_ptr(c, op, dx, x.shape()))
    multiply(c, {n, k, m, false, false}, x.dtype(), dy.raw(), w.raw(), g.p, g.accumulate, where);
  if (GradPtr g = grad_ptr(c, op, dw, w.shape()))
    multiply(c, {m, k, n, true, false}, x.dtype(), dy.raw(), x.raw(), g.p, g.accumulate, where);
  if (GradPtr g = grad_ptr(c, op, db, {m}))
    launch_sum_to(c, dy, g.p, DType::f32, {1, m}, g.accumulate, where);
}

}  // namespace tandem::cuda::train
